"""grader.sandbox.student_code.raised_in: whose code raised an exception, read from the traceback.

expect_raises credits only the student's own raise, so a ValueError from inside JAX (a pmap given a
wrong leading axis) is never taken for the check the task asks for.
"""

import importlib.util
import json
import sys
import types

import pytest

from grader.sandbox import student_code


def _load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def folders(tmp_path, monkeypatch):
    """A submission folder and a stand-in for the jax package, each with a module that raises."""
    submission, jax_dir = tmp_path / "submission", tmp_path / "site" / "jax"
    submission.mkdir()
    jax_dir.mkdir(parents=True)
    (jax_dir / "__init__.py").write_text("")
    (jax_dir / "core.py").write_text("def pmap(x):\n    raise ValueError('cannot select an axis to squeeze out')\n")
    monkeypatch.setitem(sys.modules, "jax", types.SimpleNamespace(__file__=str(jax_dir / "__init__.py")))
    monkeypatch.setattr(student_code, "_submission", str(submission))
    jax_core = _load(jax_dir / "core.py", "fake_jax_core")
    (submission / "basics.py").write_text(
        "import json\n"
        "def checked(x):\n    raise ValueError(f'x has leading axis {x}, but there are 4 devices')\n"
        "def unchecked(pmap, x):\n    return pmap(x)\n"
        "def parses(text):\n    return json.loads(text)\n")
    return _load(submission / "basics.py", "student_basics"), jax_core


def _raised(call):
    try:
        call()
    except Exception as exc:  # noqa: BLE001 - the exception is what is looked at
        return exc
    raise AssertionError("nothing raised")


def test_the_students_own_raise_is_the_submissions(folders):
    basics, _ = folders
    exc = _raised(lambda: basics.checked(5))
    assert student_code.raised_in(exc) == "submission"
    facts = student_code.exception_facts(exc)
    assert facts["where"] == "basics.py:3" and facts["raised_in"] == "submission"
    assert facts["line"] == "raise ValueError(f'x has leading axis {x}, but there are 4 devices')"
    assert facts["detail"] == "x has leading axis 5, but there are 4 devices"


def test_an_error_from_inside_jax_is_jaxs_even_when_called_from_the_submission(folders):
    basics, jax_core = folders
    exc = _raised(lambda: basics.unchecked(jax_core.pmap, 5))
    assert student_code.raised_in(exc) == "jax"
    assert student_code.exception_facts(exc)["where"] == "basics.py:5"  # the student's line that called it


def test_an_exception_type_of_jax_is_jaxs_wherever_its_frame_is(folders):
    error = type("IndivisibleError", (ValueError,), {"__module__": "jax._src.sharding"})
    assert student_code.raised_in(_raised(lambda: (_ for _ in ()).throw(error("tiles")))) == "jax"


def test_an_error_from_another_library_is_the_librarys(folders):
    basics, _ = folders
    exc = _raised(lambda: basics.parses("{"))
    assert isinstance(exc, json.JSONDecodeError) and student_code.raised_in(exc) == "library"


def test_a_classified_failure_carries_who_raised_it_across_the_wire(folders):
    basics, jax_core = folders
    failure = student_code.classify(_raised(lambda: basics.unchecked(jax_core.pmap, 5)), "square_plus_one()")
    again = type(failure).from_reply(failure.as_reply())
    assert (again.kind, again.exc_type, again.raised_in, again.line) == ("raised", "ValueError", "jax",
                                                                        "return pmap(x)")
    assert again.message == ("square_plus_one() raised ValueError at `return pmap(x)`: cannot select an axis to "
                             "squeeze out")


def test_a_failure_names_the_students_line_shortened(folders, tmp_path):
    """The message quotes the line that raised (the traceback inside the worker), cut to a readable length."""
    (tmp_path / "submission" / "long.py").write_text("def f(xs):\n    return xs[len(xs)]" + " + 0" * 40 + "\n")
    failure = student_code.classify(_raised(lambda: _load(tmp_path / "submission" / "long.py", "student_long").f([1])),
                                    "f()")
    assert failure.message.startswith("f() raised IndexError at `return xs[len(xs)] + 0")
    assert failure.message.endswith("...`: list index out of range") and failure.where == "long.py:2"


def test_what_a_failure_keeps_of_a_flood_is_capped(folders, tmp_path):
    basics, _ = folders
    facts = student_code.exception_facts(_raised(lambda: basics.checked("9" * 10**6)))
    assert len(facts["detail"]) == student_code.DETAIL_LIMIT
    (tmp_path / "submission" / "wide.py").write_text("def f():\n    raise ValueError('x')" + "  #" + "w" * 5000 + "\n")
    facts = student_code.exception_facts(_raised(_load(tmp_path / "submission" / "wide.py", "student_wide").f))
    assert facts["line"].startswith("raise ValueError('x')") and len(facts["line"]) <= 300


def test_an_exception_with_no_message_never_ends_at_a_colon(folders):
    basics, jax_core = folders
    (jax_core_path := __import__("pathlib").Path(jax_core.__file__)).write_text("def psum(x):\n    assert x == 1\n")
    silent = _load(jax_core_path, "fake_jax_silent")
    failure = student_code.classify(_raised(lambda: basics.unchecked(silent.psum, 5)), "f()")
    assert failure.message == ("f() raised AssertionError at `return pmap(x)` with no message (JAX gave no reason: the "
                               "arguments of this line's JAX call are where to look)"), failure.message
    assert not failure.message.rstrip().endswith(":")
    own = student_code.classify(_raised(lambda: (_ for _ in ()).throw(AssertionError())), "f()")
    assert own.message.endswith("raised AssertionError with no message"), own.message


def test_only_the_students_own_not_implemented_error_is_a_stub(folders, tmp_path):
    """A stub raises NotImplementedError itself; JAX raises it too, for a use it does not support (closing over an
    input that shard_map splits on Explicit axes): that one is told with its line and JAX's words, not as a stub."""
    basics, jax_core = folders
    (tmp_path / "submission" / "stub.py").write_text("def f(x):\n    raise NotImplementedError\n")
    stub = student_code.classify(_raised(lambda: _load(tmp_path / "submission" / "stub.py", "student_stub").f(1)),
                                 "f()")
    assert (stub.kind, stub.message) == ("not_started", "f() still raises NotImplementedError")
    path = __import__("pathlib").Path(jax_core.__file__)
    path.write_text("def shard_map(x):\n    raise NotImplementedError('Closing over inputs to shard_map')\n")
    unsupported = _load(path, "fake_jax_unsupported")
    failure = student_code.classify(_raised(lambda: basics.unchecked(unsupported.shard_map, 5)), "f()")
    assert failure.kind == "raised" and failure.message == ("f() raised NotImplementedError at `return pmap(x)`: "
                                                            "Closing over inputs to shard_map"), failure.message
