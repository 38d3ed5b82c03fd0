"""The suite runs under the grader's own plugin only: what else the environment has installed (here:
pytest-xdist and pytest-timeout, which the project's own tests use) changes nothing in a grade."""

from toycourse import EXERCISE, SOLUTIONS, STUBS, SUITE, TASKS, write_course

from conftest import grade_json

SEES_NO_OTHER_PLUGIN = """
    def test_add_small(student, request):
        loaded = [name for name in ("xdist", "xdist.plugin", "timeout", "pytest_timeout")
                  if request.config.pluginmanager.has_plugin(name)]
        assert not loaded, f"plugins loaded: {loaded}"
        assert student.call("add.add", 2.0, 3.0) == 5.0
"""


def test_installed_pytest_plugins_stay_out_of_a_grade(tmp_path):
    import importlib.util

    assert importlib.util.find_spec("xdist") and importlib.util.find_spec("pytest_timeout")  # installed here
    root = write_course(tmp_path / "course", {"course": "toy", "defaults": {"devices": [1]},
                                              "exercises": {EXERCISE: {"title": "T", "tasks": TASKS[:1]}}},
                        {"test_add.py": SEES_NO_OTHER_PLUGIN}, SOLUTIONS, STUBS)
    report = grade_json(root / "solutions", "--course", str(root), exercise=EXERCISE)
    cases = [c for t in report["tasks"] for c in t["cases"]]
    assert [(c["test"], c["outcome"], c.get("message", "")) for c in cases] == [("test_add_small", "passed", "")]
