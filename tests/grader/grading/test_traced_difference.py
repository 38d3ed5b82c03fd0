"""A wrong value's message completed by how a called function, traced again, differs from the
reference's (Student.traced_difference, plugin.with_traced)."""

from grader.grading.plugin import MESSAGE_CHARS, with_traced
from grader.suite.differences import guess

SAID = ("in per_device_matmul, your jax.pmap's in_axes entry for its input 1, of shape (2, 5, 2), is None (whole on "
        "every device); the reference's is 0 (axis 0 split over the devices)")
COMPARED = f"Compared with the reference solution: {SAID}"


def test_the_measured_layout_replaces_a_guess_of_where_to_look():
    message = "f(x) is wrong at 4 of 4 entries" + guess("check the in_axes")
    assert with_traced(message, SAID, unexplained=True) == f"f(x) is wrong at 4 of 4 entries. {COMPARED}"


def test_a_long_unexplained_message_is_cut_before_the_measured_layout_and_never_through_it():
    message = "f(x) returned " + "a very long account of the values " * 30
    told = with_traced(message, SAID, unexplained=True)
    assert len(told) <= MESSAGE_CHARS and told.endswith(f"... {COMPARED}") and "...." not in told
    cut = message[: MESSAGE_CHARS - 3] + "..."  # a message the check itself cut already
    assert with_traced(cut, SAID, True).endswith(f"... {COMPARED}") and "...." not in with_traced(cut, SAID, True)


def test_a_message_that_measured_something_is_never_cut_for_the_traced_difference():
    """The compiled programs' difference, or a suite's own reading ('reduce-scatters their gradients'), stays whole:
    the traced difference is added only where both fit."""
    from grader.grading.student import COMMUNICATION
    message = ("ring_reduce_scatter(x) holds rows in another order " * 8 + f". {COMMUNICATION}: your program runs 2 "
               "collective-permutes over 'model'; the reference's runs 1")
    assert with_traced(message, SAID, unexplained=False) == message
    suite = "train_step all-reduces 100 bytes over 'data': a whole gradient. " * 6 + "JAX reduce-scatters their gradients"
    assert with_traced(suite, SAID, unexplained=False) == suite
    short = f"f(x) is wrong. {COMMUNICATION}: yours runs 2; the reference's 1"
    assert with_traced(short, SAID, unexplained=False) == f"{short}. {COMPARED}"
