"""Unit tests of grader.testing.expect_raises: the check behind "raise ValueError naming both numbers"."""

import pytest

from grader.suite import expect_raises
from grader.errors import StudentFailure


def raising(exc_type, text, kind="raised", raised_in="submission", line=None):
    def call():
        raise StudentFailure(kind, f"f() raised {exc_type}: {text}", "f.py:3", exc_type, raised_in, text, line)
    return call


def test_returns_the_students_message_when_it_names_every_number():
    text = "x has leading axis 5, but there are 4 devices."
    assert expect_raises(raising("ValueError", text), "ValueError", "f(x)", mentions=(5, 4)) == text


@pytest.mark.parametrize("text, missing", [
    ("leading axis 5, but there are 14 devices", "4"),   # inside another number
    ("leading axis 5 does not fit 4.5 devices", "4"),    # a decimal is another number
    ("leading axis 5 does not fit x4 devices", "4"),     # part of a word
    ("the leading axis is wrong", "5 and 4"),
])
def test_a_message_without_a_number_fails_and_says_which(text, missing):
    with pytest.raises(AssertionError, match=f"does not name {missing}"):
        expect_raises(raising("ValueError", text), "ValueError", "f(x)", mentions=(5, 4))


def test_negative_numbers_are_named_as_such():
    expect_raises(raising("ValueError", "no device -1 among 2"), "ValueError", "f", mentions=(-1, 2))
    with pytest.raises(AssertionError, match="does not name 1"):
        expect_raises(raising("ValueError", "no device -1 among 2"), "ValueError", "f", mentions=(-1, 1))


def test_another_exception_type_fails_naming_both_types_and_the_students_line():
    """A student's own IndexError (an index checked one too late) points at the line that raised it."""
    with pytest.raises(AssertionError) as info:
        expect_raises(raising("IndexError", "list index out of range", line="return devices[index]"), "ValueError", "f")
    assert str(info.value) == ('f raised IndexError at f.py:3: `return devices[index]` ("list index out of range"), '
                               "expected ValueError")


def test_a_returned_value_fails():
    with pytest.raises(AssertionError, match="f returned a value, expected it to raise ValueError"):
        expect_raises(lambda: 3, "ValueError", "f")


@pytest.mark.parametrize("kind", ["not_started", "timeout", "died"])
def test_failures_that_are_not_a_raised_error_pass_through(kind):
    with pytest.raises(StudentFailure) as info:
        expect_raises(raising("NotImplementedError", "stub", kind), "ValueError", "f")
    assert info.value.kind == kind


@pytest.mark.parametrize("raised_in, inside", [("jax", "inside JAX"), ("library", "inside a library")])
def test_an_error_raised_inside_jax_is_not_the_students_check(raised_in, inside):
    text = "cannot select an axis to squeeze out which has size not equal to one, got shape=(2, 6)"
    with pytest.raises(AssertionError, match=f"f raised ValueError {inside}.* at f.py:3, not from a check of your own"):
        expect_raises(raising("ValueError", text, raised_in=raised_in), "ValueError", "f", mentions=(2,))


def test_the_students_message_is_read_from_the_exception_not_from_the_grader_words_around_it():
    """A multi-process failure's message starts with the process; the exception's own text is what is checked."""
    def call():
        raise StudentFailure("raised", "process 1 of 2: g() raised ValueError: they hold [2, 4]", "g.py:5",
                             "ValueError", "submission", "they hold [2, 4]")
    assert expect_raises(call, "ValueError", "g", mentions=(2, 4)) == "they hold [2, 4]"


def test_a_failure_that_does_not_say_who_raised_it_counts_as_the_students():
    assert expect_raises(raising("ValueError", "5 rows, 4 devices", raised_in=None), "ValueError", "f",
                         mentions=(5, 4)) == "5 rows, 4 devices"


SHOTGUN = "bad shape: " + " ".join(str(k) for k in range(40))  # round 35: every small number, so any two are in it


@pytest.mark.parametrize("text", [
    SHOTGUN,
    "bad shape: 4 5 9 11 13",  # a shorter list: still three numbers that are no fact of the call
])
def test_a_message_that_lists_numbers_names_none_of_them(text):
    with pytest.raises(AssertionError, match="also names .* numbers this call has nothing to do with"):
        expect_raises(raising("ValueError", text), "ValueError", "f(x)", mentions=(5, 4), facts=(5, 6, 10))


@pytest.mark.parametrize("text", [
    "x has shape (5, 6, 10): its leading axis 5 is not the 4 devices (axis 0 must be 4)",  # the input's own sizes
    "no device 7: there are 4 devices, indices 0 .. 3",  # a range ends next to a mention
    "leading axis 5 != 4 devices (rank 3, see section 12)",  # two numbers of its own are allowed
])
def test_a_message_about_the_call_may_name_its_other_facts(text):
    mentions = (7, 4) if "device 7" in text else (5, 4)
    assert expect_raises(raising("ValueError", text), "ValueError", "f(x)", mentions=mentions, facts=(5, 6, 10)) == text
