"""grader.suite.work on programs as plain data: a device's arithmetic and its share of each input, each against
the reference's figure, with the bound 1.5 and both figures in the message."""

from __future__ import annotations

import pytest

from grader.grading.program_mode import Program
from grader.suite import work

# One device multiplies 8 pairs and adds them up: 16 operations (8 products, 8 elements summed).
HLO = """HloModule m
ENTRY %main (x: f32[8], y: f32[8]) -> f32[] {
  %x = f32[8]{0} parameter(0)
  %y = f32[8]{0} parameter(1)
  %m = f32[8]{0} multiply(%x, %y)
  %z = f32[] constant(0)
  ROOT %s = f32[] reduce(%m, %z), dimensions={0}, to_apply=%add
}
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %c = f32[] add(%a, %b)
}
"""


def program(held, reference_held, operations=None):
    from grader.suite import hlo
    figures = {"operations": hlo.operations(HLO) if operations is None else operations, "collectives": [],
               "held": reference_held}
    return Program(None, HLO, True, lambda: figures, None, "dot", held)


def shares(x, y, how="received"):
    """What a program holds of x and y: received by its per-device computation, placed by it, or as it arrived."""
    return (("x", x, how), ("y", y, how))


def test_a_share_of_an_input_within_the_bound_passes_and_one_over_it_fails_with_both_figures():
    work.expect_share_of_work(program(shares(0.3, 0.25), shares(0.25, 0.25)), "dot", "share", 4)
    with pytest.raises(AssertionError, match=r"receives all of x on 4 devices, 4.0 times the share one device of the "
                                             r"reference program receives \(25%\)"):
        work.expect_share_of_work(program(shares(1.0, 0.25), shares(0.25, 0.25)), "dot", "share", 4)
    with pytest.raises(AssertionError, match=r"receives 50% of x on 8 devices, 4.0 times the share one device of the "
                                             r"reference program receives \(12.5%\)"):  # a tenth, where it has one
        work.expect_share_of_work(program(shares(0.5, 0.125), shares(0.125, 0.125)), "dot", "share", 8)


def test_an_input_a_jit_program_places_whole_is_held_whole_where_the_reference_splits_it():
    with pytest.raises(AssertionError, match=r"each device holds all of x on 4 devices where your program places it "
                                             r"\(jax.device_put\), 4.0 times"):
        work.expect_share_of_work(program(shares(1.0, 0.25, "placed"), shares(0.25, 0.25)), "dot", "share", 4)
    with pytest.raises(AssertionError, match=r"each device holds all of x on 4 devices as the task hands it over: "
                                             r"your program computes with it without splitting it first"):
        work.expect_share_of_work(program(shares(1.0, 0.25, "arrived"), shares(0.25, 0.25)), "dot", "share", 4)


def test_an_input_no_per_device_computation_receives_is_not_compared():
    work.expect_share_of_work(program(shares(1.0, None), shares(None, 0.25)), "dot", "share", 4)


def test_a_program_too_deep_to_follow_counts_as_receiving_every_input_whole():
    with pytest.raises(AssertionError, match="counts as receiving every input whole"):
        work.expect_share_of_work(program(None, [["x", 0.25, False], ["y", 0.25, False]]), "dot", "share", 4)


def test_the_whole_computation_on_every_device_is_told_as_a_design_and_a_share_is_not():
    assert work.whole_on_every_device(program((), [], operations=4), "dot", 4) is not None
    assert work.whole_on_every_device(program((), [], operations=15), "dot", 4) is None
    assert work.whole_on_every_device(program((), [], operations=4), "dot", 1) is None


def test_on_two_devices_the_whole_work_needs_an_input_handed_whole_as_well():
    """Round 47: a costlier algorithm on each device's own share (statistics X^T X) is 2 times the reference's on 2
    devices too; only a per-device computation handed more than its share shows the whole work on every device."""
    own, whole = shares(0.5, 0.5), shares(1.0, 1.0)
    assert work.whole_on_every_device(program(own, shares(0.5, 0.5), operations=8), "dot", 2) is None
    assert work.whole_on_every_device(program(whole, shares(0.5, 0.5), operations=8), "dot", 2) is not None
    with pytest.raises(AssertionError) as costlier:
        work.expect_share_of_work(program(own, shares(0.5, 0.5), operations=8), "dot", "share", 2)
    assert "2.0 times the reference's;" in str(costlier.value) and "whole computation" not in str(costlier.value)


def test_on_one_device_nothing_is_compared():
    """One device's share is the whole work: a reference XLA folded to no arithmetic bounds nothing there."""
    folded = program((("x", 1.0, False), ("y", 1.0, False)), [["x", 1.0, False], ["y", 1.0, False]], operations=0)
    work.expect_share_of_work(folded, "standardize", "share", 1)
    with pytest.raises(AssertionError, match="one device of the reference program performs"):
        work.expect_share_of_work(folded, "standardize", "share", 2)


def test_work_outside_the_per_device_code_is_the_larger_of_its_even_spread_and_what_the_device_runs_beyond_it():
    # the device runs 16 operations (8 products, 8 elements summed): with 16 written inside, only the spread figure
    # is left; with 4 written inside (the rest written around the pmap and split by XLA over one mesh axis only),
    # the 12 it runs beyond them
    assert work.outside_per_device(HLO, 2, 16) == 2
    assert work.outside_per_device(HLO, 2, 4) == 12
    assert work.outside_per_device(HLO, 2, None) == 2  # a loop of unknown length inside: the spread figure alone
    assert work.outside_per_device(HLO, None, 3) is None


def outside(mine, theirs, operations=15):
    figures = {"operations": operations, "outside": theirs, "collectives": [], "held": []}
    return Program(None, HLO, True, lambda: figures, None, "dot", (), True, mine)


def test_more_work_outside_than_the_reference_plus_a_quarter_of_its_whole_is_told_as_a_design():
    assert work.left_outside(outside(3, 0), "dot", 4, "jax.pmap") is None  # within a quarter of the reference's 15
    assert work.left_outside(outside(5, 2), "dot", 4, "jax.pmap") is None  # the reference writes 2 there itself
    assert work.left_outside(outside(7, 0), "dot", 4, "jax.pmap") is not None  # the products of a dot, half of it
    said = work.left_outside(outside(15, 0), "dot", 4, "jax.pmap")
    assert "writes outside its jax.pmap comes to 15 arithmetic operations on each device" in said
    assert "the reference's program leaves 0 per device there, and one device of it performs 15 in all" in said
    assert "a loop whose length" in work.left_outside(outside(None, 0), "dot", 4, "jax.pmap")
    assert work.left_outside(outside(15, 0), "dot", 1, "jax.pmap") is None  # one device: nothing to split
    assert work.left_outside(outside(15, None), "dot", 4, "jax.pmap") is None  # the reference's own is unknown


# One device multiplies a (2, 3) block by a (3, 5) one: 30 multiply-adds, 60 operations.
PRODUCT = """HloModule m
ENTRY %main (x: f32[2,3], w: f32[3,5]) -> f32[2,5] {
  %x = f32[2,3]{1,0} parameter(0)
  %w = f32[3,5]{1,0} parameter(1)
  ROOT %p = f32[2,5]{1,0} dot(%x, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
"""


def products(reference):
    figures = {"operations": 60, "products": reference, "outside": 0, "collectives": [], "held": []}
    return Program(None, PRODUCT, True, lambda: figures, None, "collective_matmul")


def test_products_beyond_the_references_by_half_the_smallest_that_counts_fail_with_both_figures():
    work.expect_products_once(products(60), "collective_matmul", 30, "Multiply once.", "on 8 devices")
    work.expect_products_once(products(50), "collective_matmul", 30, "Multiply once.", "on 8 devices")  # 10 < 15
    work.expect_products_once(products(None), "collective_matmul", 30, "Multiply once.", "on 8 devices")  # unknown
    with pytest.raises(AssertionError) as caught:
        work.expect_products_once(products(30), "collective_matmul", 30, "Multiply once.", "on 8 devices")
    assert str(caught.value) == (
        "in collective_matmul the products one device runs on 8 devices come to 30 multiply-adds, 15 more than one "
        "device of the reference program runs (15): some product is computed more than the task needs, and a product "
        "computed again multiplies nothing new while a block travels. Multiply once.")
