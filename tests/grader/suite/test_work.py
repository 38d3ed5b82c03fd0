"""grader.suite.work on programs as plain data: a device's arithmetic and its share of each input, each against
the reference's figure, with the bound 1.5 and both figures in the message."""

from __future__ import annotations

import pytest

from grader.grading.program_mode import Program
from grader.suite import work

# One device multiplies 8 pairs and adds them up: 15 operations.
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


def test_a_share_of_an_input_within_the_bound_passes_and_one_over_it_fails_with_both_figures():
    work.expect_share_of_work(program((("x", 0.3), ("y", 0.25)), [["x", 0.25], ["y", 0.25]]), "dot", "share", 4)
    with pytest.raises(AssertionError, match=r"receives all of x on 4 devices, 4.0 times the share one device of the "
                                             r"reference program receives \(25%\)"):
        work.expect_share_of_work(program((("x", 1.0), ("y", 0.25)), [["x", 0.25], ["y", 0.25]]), "dot", "share", 4)


def test_an_input_no_per_device_computation_receives_is_not_compared():
    work.expect_share_of_work(program((("x", 1.0), ("y", None)), [["x", None], ["y", 0.25]]), "dot", "share", 4)


def test_a_program_too_deep_to_follow_counts_as_receiving_every_input_whole():
    with pytest.raises(AssertionError, match="counts as receiving every input whole"):
        work.expect_share_of_work(program(None, [["x", 0.25], ["y", 0.25]]), "dot", "share", 4)


def test_the_whole_computation_on_every_device_is_told_as_a_design_and_a_share_is_not():
    assert work.whole_on_every_device(program((), [], operations=4), "dot", 4) is not None
    assert work.whole_on_every_device(program((), [], operations=15), "dot", 4) is None
    assert work.whole_on_every_device(program((), [], operations=4), "dot", 1) is None


def test_on_one_device_nothing_is_compared():
    """One device's share is the whole work: a reference XLA folded to no arithmetic bounds nothing there."""
    folded = program((("x", 1.0), ("y", 1.0)), [["x", 1.0], ["y", 1.0]], operations=0)
    work.expect_share_of_work(folded, "standardize", "share", 1)
    with pytest.raises(AssertionError, match="one device of the reference program performs"):
        work.expect_share_of_work(folded, "standardize", "share", 2)
