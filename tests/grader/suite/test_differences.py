"""grader.suite.differences: a relation is said only when it holds on every entry; probes name whose block."""

import numpy as np
import pytest

from grader.suite import differences, expect_close
from grader.suite.differences import Probe, Split, locate, measured, named_factor, probed, relation, reordered

RNG = np.random.default_rng(0)
A = RNG.normal(size=(4, 3))
SQUARE = RNG.normal(size=(4, 4))


def test_a_factor_is_named_by_the_count_it_equals():
    assert relation(2 * A, A, counts={"devices": 2}) == "is 2 times the answer (2 is the number of devices) at every entry"
    assert "1/4 of the answer (4 is the number of devices and of rows)" in relation(A / 4, A, counts={"devices": 4,
                                                                                                      "rows": 4})
    assert relation(3 * A, A, counts={"devices": 2}) == "is 3 times the answer at every entry"
    assert named_factor(-1.0, {}) == "the answer with its sign flipped"


def test_zeros_are_not_called_a_factor():
    assert relation(np.zeros_like(A), A, counts={"devices": 2}) == "is 0 at every entry, where the answer is not"


def test_a_factor_within_one_percent_is_no_factor():
    assert relation(A * 0.998, A, counts={"devices": 2}) is None  # an epsilon under a square root, say


def test_a_factor_is_not_claimed_of_one_value_or_off_one_entry():
    assert relation(np.float64(3.0), np.float64(1.0), counts={"devices": 2}) is None
    assert relation(np.float64(2.0), np.float64(1.0), counts={"devices": 2}) == \
        "is 2 times the answer (2 is the number of devices)"  # one value, but a count of the task
    off = 2 * A
    off[0, 0] += 1
    assert relation(off, A, counts={"devices": 2}) is None


def test_transpose_offset_and_blocks_in_another_order():
    assert relation(SQUARE.T, SQUARE).startswith("is the answer transposed")
    assert relation(A + 0.5, A) == "is the answer plus 0.5 at every entry"
    swapped = np.concatenate([A[2:], A[:2]])
    said = relation(swapped, A, counts={"devices": 2})
    assert said == "holds the right 2 blocks of rows in the wrong order: rows 0-1 hold what rows 2-3 should; rows 2-3 " \
                   "hold what rows 0-1 should", said


def test_blocks_in_a_different_order_within_each_block_of_columns():
    y = RNG.normal(size=(8, 4))
    got = y.copy()
    got[:, 2:] = np.roll(y[:, 2:], 2, axis=0)  # the second block of columns has its row blocks rotated
    said = relation(got, y, counts={"devices along 'model'": 4, "devices along 'data'": 2})
    assert said.startswith("holds the answer's blocks of rows in the wrong order, in a different order in each of the 2 blocks of "
                           "columns: in columns 2-3, rows 0-1 hold what rows 6-7 should"), said


def test_a_block_held_twice_is_not_called_an_order():
    got = np.concatenate([A[:2], A[:2]])
    said = relation(got, A, counts={"devices": 2})
    assert said == "holds in each of its 2 blocks of rows one of the answer's, but not each once: rows 2-3 hold what " \
                   "rows 0-1 should", said


def test_no_relation_for_noise_nan_or_another_shape():
    assert relation(A + RNG.normal(size=A.shape), A, counts={"devices": 2}) is None
    assert relation(np.full_like(A, np.nan), A) is None
    assert relation(A[:2], A) is None


def test_where_it_differs_by_blocks():
    wrong = A.copy()
    wrong[3] += 1
    assert locate(wrong, A, counts={"devices": 2}) == "is right in rows 0-1 and wrong in rows 2-3"
    out = Split(0, 0, 4, "y")
    assert locate(wrong, A, out=out) == "is right on 3 devices and wrong on device 3"
    assert locate(A + 1, A, counts={"devices": 2}) is None  # wrong everywhere: no block to point at


X, Y = RNG.normal(size=8), RNG.normal(size=8)


def dot(x, y):
    return np.dot(x, y)


def dot_probe(rerun, n=2):
    return Probe(reference=dot, inputs=(X, Y), splits=(Split(0, 0, n, "x"), Split(1, 0, n, "y")), rerun=rerun,
                 counts={"devices": n})


def test_a_missing_contribution_is_named_by_whose_block():
    def student(x, y):  # device 1's partial product never added
        return np.dot(x[:4], y[:4])
    said = probed(dot_probe(student), student(X, Y))
    assert said == "leaves out x's block 1 (device 1's)", said


def test_a_scalar_factor_is_proven_block_by_block():
    def pmean(x, y):  # pmean where psum belongs: a count of the task, said of the one value
        return np.dot(x, y) / 4
    assert measured(pmean(X, Y), dot(X, Y), probe=dot_probe(pmean, 4)) == \
        "is 1/4 of the answer (4 is the number of devices)"

    def third(x, y):  # no count: a factor only the blocks, one at a time, prove
        return np.dot(x, y) / 3
    said = measured(third(X, Y), dot(X, Y), probe=dot_probe(third, 4))
    assert said == "is 0.3333 times the answer, and so is what each block of x adds alone", said


def test_an_input_split_strided_is_said_from_the_reference_alone():
    def student(x, y):  # x in blocks, y dealt out like cards: device d pairs x's block d with y[d::2]
        return sum(np.dot(x[4 * d:4 * d + 4], y[d::2]) for d in range(2))
    probe = dot_probe(None)
    said = measured(student(X, Y), dot(X, Y), probe=probe)
    assert said == ("is the answer for y split strided (device d's part holding entries d, d + 2, d + 4, ...), where "
                    "the task splits y into blocks of consecutive entries"), said
    x3, y3 = X[:3], Y[:3]  # length 3 on 2 devices: the strided order is its own inverse, so x or y: not told which
    both = reordered(Probe(reference=dot, inputs=(x3, y3), splits=(Split(0, 0, 2, "x"), Split(1, 0, 2, "y"))),
                     np.dot(x3, y3[[0, 2, 1]]))
    assert both == ("is the answer for x and y split differently: one of them strided (device d's part holding entries "
                    "d, d + 2, d + 4, ...), the other into blocks of consecutive entries"), both
    assert reordered(probe, dot(X, Y) + 1) is None  # no order of an input explains it
    odd = RNG.normal(size=5)  # a length the device count does not divide: blocks of 3 and 2, pieces 0, 2, 4 and 1, 3
    assert reordered(Probe(reference=lambda v: v * np.arange(5), inputs=(odd,), splits=(Split(0, 0, 2, "v"),)),
                     odd[[0, 2, 4, 1, 3]] * np.arange(5)).startswith("is the answer for v split strided")


def test_a_block_counted_twice():
    def student(x, y):
        return np.dot(x, y) + np.dot(x[4:], y[4:])
    assert probed(dot_probe(student), student(X, Y)) == "counts twice x's block 1 (device 1's)"


def test_probes_claim_nothing_where_the_task_or_the_student_is_not_additive():
    squares = Probe(reference=lambda x: x ** 2 + 1, inputs=(X,), splits=(Split(0, 0, 2, "x"),),
                    rerun=lambda x: x ** 2)
    assert probed(squares, X ** 2) is None

    def student(x, y):  # not additive in x: blocks cannot explain the value
        return np.dot(x, y) ** 2
    assert probed(dot_probe(student), student(X, Y)) is None
    assert probed(Probe(reference=dot, inputs=(X, Y), splits=(Split(0, 0, 2, "x"),)), 0.0) is None  # no rerun


RING = RNG.normal(size=(4, 3))


def ring_probe(rerun):
    return Probe(reference=lambda x: np.broadcast_to(x.sum(axis=0), x.shape), inputs=(RING,),
                 splits=(Split(0, 0, 4, "x"),), out=Split(0, 0, 4, "result"), rerun=rerun, counts={"devices": 4})


def test_each_device_missing_another_devices_block():
    def student(x):  # adds before it shifts: the block n - 1 steps away never arrives
        n = len(x)
        return np.stack([sum(x[(d - s) % n] for s in range(n - 1)) for d in range(n)])
    said = probed(ring_probe(student), student(RING))
    assert said == ("leaves out x's block 1 (device 1's) from device 0's result; x's block 2 (device 2's) from device "
                    "1's result; x's block 3 (device 3's) from device 2's result; x's block 0 (device 0's) from device "
                    "3's result"), said


def test_a_result_missing_several_blocks_says_which_it_holds():
    """Round 37: only the block that arrived last added to a device's own; the list of what each result left out hid
    that each holds two blocks."""
    def student(x):
        n = len(x)
        return np.stack([x[d] + x[(d - (n - 1)) % n] for d in range(n)])
    said = probed(ring_probe(student), student(RING))
    assert said == ("holds only 2 of x's 4 blocks in each device's result: device 0's blocks 0 and 1; device 1's "
                    "blocks 1 and 2; device 2's blocks 2 and 3; device 3's blocks 0 and 3; the answer counts each block "
                    "once in every result"), said


def test_blocks_counted_more_than_twice_say_how_many_times():
    def student(x):  # the running sum passed on: device d counts block d - 1 and d - 2 three times each
        total = x.copy()
        for _ in range(len(x) - 1):
            total = total + np.roll(total, 1, axis=0)
        return total
    said = probed(ring_probe(student), student(RING))
    assert said.startswith("counts x's blocks unevenly in each device's result: device 0's counts block 0 once, block "
                           "1 once, block 2 3 times and block 3 3 times; device 1's counts block 0 3 times,"), said
    assert said.endswith("; the answer counts each block once in every result"), said

    def halves(x):  # half of a block is no whole number of times: nothing is claimed block by block
        return np.broadcast_to(x.sum(axis=0) - x[0] / 2, x.shape)
    assert probed(ring_probe(halves), halves(RING)) is None


def test_chunks_of_a_block_that_land_on_the_wrong_device_are_named_by_chunk():
    def reference(x):  # a reduce-scatter over 2 devices of 2 chunks each: device d sums chunk d of both blocks
        chunks = x.reshape(2, 2, -1)
        return np.concatenate([chunks[:, d].sum(axis=0) for d in range(2)])

    def student(x):  # the running sum passed on before its own chunk is added: device d gets device d - 1's chunks
        chunks = x.reshape(2, 2, -1)
        return np.concatenate([chunks[(d - 1) % 2].sum(axis=0) for d in range(2)])
    x = RNG.normal(size=(8,))
    probe = Probe(reference=reference, inputs=(x,), splits=(Split(0, 0, 2, "x"), Split(0, 0, 4, "x", chunks=2)),
                  out=Split(0, 0, 2, "the result"), rerun=student)
    said = probed(probe, student(x))
    assert said.startswith("puts blocks in the wrong place: chunk 0 of x's block 0 (device 0's) lands in device 1's "
                           "result, where it belongs in device 0's"), said


def test_a_block_landed_in_the_wrong_place():
    def reference(x):
        return 2 * x

    def student(x):
        return 2 * np.roll(x, 1, axis=0)
    probe = Probe(reference=reference, inputs=(RING,), splits=(Split(0, 0, 4, "x"),), out=Split(0, 0, 4, "result"),
                  rerun=student)
    said = probed(probe, student(RING))
    assert said.startswith("puts blocks in the wrong place: x's block 0 (device 0's) lands in device 1's result, where "
                           "it belongs in device 0's"), said


def test_expect_close_says_the_measured_difference():
    with pytest.raises(AssertionError, match=r"^f\(x\) is the answer plus 0.5 at every entry$"):
        expect_close(A + 0.5, A, what="f(x)")

    def student(x, y):
        return np.dot(x[:4], y[:4])
    with pytest.raises(AssertionError, match=r"returned .*, expected .*: it leaves out x's block 1 \(device 1's\)$"):
        expect_close(student(X, Y), dot(X, Y), what="dot(x, y)", probe=dot_probe(student))


def test_a_step_that_moves_its_input_by_a_factor_of_the_right_change():
    w = RNG.normal(size=(4, 3))
    step = RNG.normal(size=(4, 3))
    said = relation(w - step / 2, w - step, counts={"devices along 'data'": 2}, starts=(RNG.normal(size=(2,)), w))
    assert said == ("changes argument 1 by 1/2 of the change the answer makes (2 is the number of devices along "
                    "'data') at every entry"), said
    assert relation(w - step / 2, w - step, starts=(w + 1,)) is None  # not the input the step starts from


def test_a_wrong_shape_says_which_axis_is_off_by_which_count():
    from grader.suite.differences import shape_relation
    model = {"devices along 'model'": 2}
    assert shape_relation((8, 12), (16, 6), model) == (
        "axis 0 is 1/2 as long as the answer's (2 is the number of devices along 'model'); axis 1 is 2 times as long "
        "as the answer's (2 is the number of devices along 'model')")
    assert shape_relation((8, 13), (16, 6), model) is None  # one axis off by no count: nothing claimed
    assert shape_relation((8,), (8, 1), model) is None
    with pytest.raises(AssertionError, match=r"returned shape \(16, 12\), expected shape \(16, 6\): axis 1 is 2 times"):
        expect_close(np.zeros((16, 12)), np.zeros((16, 6)), what="f", counts=model)


def test_blocks_on_the_wrong_axis_and_copies_laid_out_as_split_are_told_from_the_values():
    from grader.suite.differences import restacked

    y = np.arange(24.0).reshape(8, 3)
    side_by_side = np.concatenate(np.split(y, 4, axis=0), axis=1)  # (2, 12): out_specs on the columns
    assert "4 blocks of rows side by side along axis 1 instead of along axis 0" in restacked(side_by_side, y)
    assert "the answer 2 times over, one copy after another along axis 1" in restacked(np.concatenate([y, y], 1), y)
    # The same shapes with other numbers: nothing is claimed.
    assert restacked(side_by_side + 1, y) is None
    assert restacked(np.concatenate([y, y + 1], 1), y) is None
    assert restacked(y, y) is None


def test_expect_close_says_how_a_wrong_shape_holds_the_answer():
    y = np.arange(24.0).reshape(8, 3)
    with pytest.raises(AssertionError, match="returned shape \\(2, 12\\), expected shape \\(8, 3\\): it holds the "
                                             "answer's 4 blocks of rows side by side"):
        expect_close(np.concatenate(np.split(y, 4, axis=0), axis=1), y, what="step")


def test_a_guess_where_to_look_gives_way_to_a_measured_difference():
    said = differences.restacked(np.arange(24.0).reshape(8, 3).reshape(2, 4, 3).transpose(1, 0, 2).reshape(4, 6),
                                 np.arange(24.0).reshape(8, 3))
    assert said.endswith("gives the mesh axis)") and "(check which dimension" in said
    assert differences.without_guess(said).endswith("each block is right, on the wrong axis")
    assert differences.without_guess("returned 3, expected 4 (a note)") == "returned 3, expected 4 (a note)"


def test_a_result_that_is_its_input_unchanged_is_said_so():
    """A ring with no step: each device returns its own block, where the answer adds the others' (not "0 times")."""
    x = RNG.normal(size=(2, 3))
    assert relation(x, np.broadcast_to(x.sum(axis=0), x.shape), starts=(x,)) == (
        "returns argument 0 unchanged at every entry, where the answer changes it")


def test_a_narrow_float_result_off_by_its_rounding_says_so_and_one_further_off_does_not():
    import ml_dtypes

    expected = RNG.normal(size=(4, 3))
    rounded = expected.astype(ml_dtypes.bfloat16)
    with pytest.raises(AssertionError, match=r"the result is bfloat16, which keeps about 3 significant digits"):
        expect_close(rounded, expected, what="mlp", rtol=1e-6, atol=1e-6)
    with pytest.raises(AssertionError) as wrong:
        expect_close((expected + 1).astype(ml_dtypes.bfloat16), expected, what="mlp")
    assert "bfloat16" not in str(wrong.value)
    with pytest.raises(AssertionError) as wrong:  # a float32 result is wrong for some other reason
        expect_close((expected * 1.001).astype(np.float32), expected, what="mlp", rtol=1e-6, atol=1e-6)
    assert "significant digits" not in str(wrong.value)
    # round 48: computed in bfloat16 (or float16) and cast back to float32: every entry is a narrow float's value
    for narrow, name in ((ml_dtypes.bfloat16, "bfloat16"), (np.float16, "float16")):
        with pytest.raises(AssertionError, match=rf"every entry of the result is a {name} value cast back to float32"):
            expect_close(expected.astype(narrow).astype(np.float32), expected, what="mlp", rtol=1e-6, atol=1e-6)


def test_a_result_whose_only_wrong_entries_are_zeros_says_which_rows():
    expected = RNG.normal(size=(8, 3)) + 5
    got = expected.copy()
    got[2:4] = 0
    with pytest.raises(AssertionError, match=r"^collective_matmul is 0 at each of its 6 wrong entries \(in rows "
                                             r"2-3\), and right at every other$"):
        expect_close(got, expected, what="collective_matmul")
    got[5, 0] = 1.0  # one wrong entry that is not 0: no such fact
    with pytest.raises(AssertionError) as wrong:
        expect_close(got, expected, what="collective_matmul")
    assert "wrong entries" not in str(wrong.value)


def test_a_factor_named_as_the_device_count_is_not_where_another_count_measured_it_too():
    """Round 49: a stray / 2 in a loss is 1/2 of the update on 2 devices and on 4; on 2 it equals the device count,
    which the 4-device case disproves. A factor that follows the count (2 on 2, 4 on 4) stays named."""
    from grader.suite.differences import device_count_disproved
    on2 = "params changes argument 0 by 1/2 of the change the answer makes (2 is the number of devices) at every entry"
    on4 = "params changes argument 0 by 0.5 times the change the answer makes at every entry"
    assert device_count_disproved(on2, 2, {2: on2, 4: on4}) == (
        "params changes argument 0 by 1/2 of the change the answer makes (the same on 4 devices: a factor of the code, "
        "not the device count) at every entry")
    follows2, follows4 = ("x is 2 times the answer (2 is the number of devices)",
                          "x is 4 times the answer (4 is the number of devices)")
    assert device_count_disproved(follows2, 2, {2: follows2, 4: follows4}) == follows2
    assert device_count_disproved(follows4, 4, {2: follows2, 4: follows4}) == follows4
    assert device_count_disproved(on2, 2, {2: on2}) == on2  # no other count: nothing tells
    other_thing = "y is 0.5 times the answer at every entry"  # the same factor of something else tells nothing
    assert device_count_disproved(on2, 2, {2: on2, 4: other_thing}) == on2
