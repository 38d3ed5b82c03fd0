"""How catalogue.py shares ``grade`` runs between catalogues: never two tasks that read one module.

The catalogues' own tests pass whichever runs their entries land in; these check the plan, so that a
run that would let one entry's module reach another task's suite cannot come about unnoticed.
"""

import catalogue
from catalogue import Catalogue, Right, Wrong


def _plan(monkeypatch, *catalogues_args) -> tuple[list[Catalogue], catalogue._Runs]:
    monkeypatch.setattr(catalogue, "_catalogues", [])  # made here, planned here only, never graded
    made = [Catalogue(**kwargs) for kwargs in catalogues_args]
    return made, catalogue._Runs(made)


def _runs_of(runs: catalogue._Runs) -> list[set[tuple[str, str]]]:
    return [{(c.task, name) for c, name in run.members} for run in runs.runs]


def test_entries_of_tasks_with_modules_of_their_own_share_runs(monkeypatch):
    _, runs = _plan(monkeypatch,
                    {"task": "dot", "wrong": {"a": Wrong({"dot": "A"}, "2"), "b": Wrong({"dot": "B"}, "2")}},
                    {"task": "shard", "wrong": {"c": Wrong({"shard": "C"}, "2")}})
    assert _runs_of(runs) == [{("dot", "a"), ("shard", "c")}, {("dot", "b")}]
    assert runs.runs[0].tasks == {"dot", "shard"}


def test_tasks_that_share_a_module_never_meet(monkeypatch):
    _, runs = _plan(monkeypatch,
                    {"task": "ring", "wrong": {"a": Wrong({"ring": "A"}, "4")}},
                    {"task": "ring_optimal", "wrong": {"b": Wrong({"ring": "B"}, "4")}},
                    {"task": "mesh", "wrong": {"c": Wrong({"mesh": "C"}, "4")}})
    assert _runs_of(runs) == [{("ring", "a"), ("mesh", "c")}, {("ring_optimal", "b")}]


def test_other_device_counts_or_exercises_never_meet(monkeypatch):
    _, runs = _plan(monkeypatch,
                    {"task": "dot", "wrong": {"a": Wrong({"dot": "A"}, "2")}},
                    {"task": "shard", "wrong": {"b": Wrong({"shard": "B"}, "1,2,4")}},
                    {"task": "fsdp", "exercise": "exercise8", "wrong": {"c": Wrong({"fsdp": "C"}, "2")}})
    assert len(runs.runs) == 3


def test_an_intact_task_keeps_the_solutions_modules(monkeypatch):
    """dot's first wrong entry must leave ring at full points: no entry of ring (or of a task reading
    ring.py) runs beside it, and a correct entry of another module may."""
    _, runs = _plan(monkeypatch,
                    {"task": "dot", "intact": "ring", "wrong": {"a": Wrong({"dot": "A"}, "2")},
                     "right": {"r": Right({"dot": "R"}, "2")}},
                    {"task": "ring", "wrong": {"b": Wrong({"ring": "B"}, "2")}},
                    {"task": "ring_optimal", "wrong": {"c": Wrong({"ring": "C"}, "2")}},
                    {"task": "shard", "wrong": {"d": Wrong({"shard": "D"}, "2")}})
    placed = _runs_of(runs)
    first = next(run for run in placed if ("dot", "a") in run)
    assert first == {("dot", "a"), ("shard", "d")}
    assert runs.runs[placed.index(first)].tasks == {"dot", "ring", "shard"}
    assert not any({("ring", "b"), ("ring_optimal", "c")} <= run for run in placed)


def test_an_intact_task_no_catalogue_knows_runs_alone(monkeypatch):
    _, runs = _plan(monkeypatch,
                    {"task": "dot", "intact": "train", "wrong": {"a": Wrong({"dot": "A"}, "2")}},
                    {"task": "shard", "wrong": {"b": Wrong({"shard": "B"}, "2")}})
    assert _runs_of(runs) == [{("dot", "a")}, {("shard", "b")}]


def test_every_entry_is_in_exactly_one_run_and_graded_with_its_own_modules(monkeypatch):
    made, runs = _plan(monkeypatch,
                       *({"task": t, "wrong": {f"{t}{i}": Wrong({t: f"{t}{i}"}, "2") for i in range(3)}}
                         for t in ("dot", "shard", "train")))
    members = [(c.task, name) for run in runs.runs for c, name in run.members]
    assert sorted(members) == sorted((c.task, name) for c in made for name in c.entries())
    for run in runs.runs:
        sources = {m: s for c, name in run.members for m, s in c.entries()[name].modules.items()}
        assert sources == {c.task: name for c, name in run.members}
