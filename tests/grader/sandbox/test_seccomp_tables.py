"""Every call the filter denies has a number on every architecture it knows, unless that architecture
lacks the call altogether (then it is listed as absent): a name left out of a table is not silently allowed."""

import pytest

from grader.sandbox import seccomp


@pytest.mark.parametrize("machine", sorted(seccomp._TABLES))
def test_every_denied_call_is_numbered_or_known_absent(machine):
    numbers = seccomp._TABLES[machine][2]
    absent = seccomp._ABSENT.get(machine, set())
    assert [n for n in seccomp.DENIED if n not in numbers and n not in absent] == []
    assert not absent & set(numbers), "a call listed absent has a number after all"
