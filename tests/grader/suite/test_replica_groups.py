"""Each form XLA prints a collective's device groups in, read as the same groups.

The forms come from real programs (tests/grader/suite/test_hlo.py reads them in whole modules); here
each is checked on its own, with device orders a program on 8 devices prints.
"""

import pytest

from grader.suite import replica_groups

ROWS_OF_2X4 = ((0, 1, 2, 3), (4, 5, 6, 7))
COLUMNS_OF_2X4 = ((0, 4), (1, 5), (2, 6), (3, 7))


@pytest.mark.parametrize("text, groups", [
    ("x), channel_id=1, replica_groups={{0,1,2,3},{4,5,6,7}}, use_global_device_ids=true", ROWS_OF_2X4),
    ("x), source_target_pairs={{0,1},{1,0}}, metadata={}", ((0, 1), (1, 0))),
    ("x), replica_groups={}, to_apply=%add", ()),
    ("x), replica_groups=[2,4]<=[8], dimensions={0}", ROWS_OF_2X4),
    ("x), replica_groups=[4,2]<=[2,4]T(1,0), dimensions={0}", COLUMNS_OF_2X4),
    ("x), replica_groups=mesh['axis_0'=2,'axis_1'=4] {'axis_1'}, use_global_device_ids=true", ROWS_OF_2X4),
    ("x), replica_groups=mesh['axis_0'=2,'axis_1'=4] {'axis_0'}, use_global_device_ids=true", COLUMNS_OF_2X4),
    ("x), replica_groups=mesh[axis_0=2,axis_1=4] {axis_0,axis_1}, to_apply=%add", ((0, 1, 2, 3, 4, 5, 6, 7),)),
    # XLA's mesh of its own, its devices laid out [2,4] then transposed: 'axis_1' is each row of a 2 x 4 mesh
    ("x), replica_groups=mesh['axis_0'=1,'axis_1'=4,'axis_2'=2], device_ids=([2,4]T(1,0)) {'axis_1'}, ",
     ((0, 1, 2, 3), (4, 5, 6, 7))),
    ("x), replica_groups=mesh['a'=2,'b'=2], device_ids=(0,2,1,3) {'b'}, ", ((0, 2), (1, 3))),
])
def test_every_printed_form_gives_the_groups(text, groups):
    assert replica_groups.parse(text) == groups


@pytest.mark.parametrize("text", [
    "x), channel_id=1, use_global_device_ids=true",                                  # none printed
    "x), replica_groups=mesh['axis_0'=4] {'axis_0':(1)2}, to_apply=%add",            # a sub-axis
    "x), replica_groups=mesh['a'=2,'b'=2], device_ids=(0,1,2) {'b'}, ",               # ids that do not fill it
    "x), replica_groups=[3,3]<=[8], dimensions={0}",                                  # an iota that does not
])
def test_a_form_not_understood_is_none_not_a_guess(text):
    assert replica_groups.parse(text) is None
