"""The student's traces for a message are bounded: one waits TRACE_S at most, a run spends TRACES_S at most, so a
function slow only when traced for a message (hostile, or just slow) cannot slow a run down by more."""

from types import SimpleNamespace

from grader.errors import StudentFailure
from grader.layout import Layout
from grader.workers import pool as pool_module
from grader.workers.pool import WorkerPool


def test_a_function_slow_only_when_traced_costs_a_run_at_most_the_trace_budget(monkeypatch):
    clock, asked = [0.0], []

    def request(layout, op, target, specs, kwargs, what, timeout_s):
        asked.append(timeout_s)
        clock[0] += timeout_s  # it sleeps until it is stopped
        raise StudentFailure("timeout", f"{what} took longer than {timeout_s} s")

    monkeypatch.setattr(pool_module.time, "monotonic", lambda: clock[0])
    pool = WorkerPool.__new__(WorkerPool)  # no worker: only the budget is under test
    pool.run, pool._trace_left_s, pool.request = SimpleNamespace(reference=None), pool_module.TRACES_S, request
    for _ in range(50):
        assert pool.traced_collectives(Layout(2), "basics.f", (), {}, "f()", timeout_s=120) is None
    assert asked == [pool_module.TRACE_S] * int(pool_module.TRACES_S // pool_module.TRACE_S)
    assert clock[0] <= pool_module.TRACES_S


def test_a_quick_trace_is_answered_and_spends_only_its_own_time(monkeypatch):
    clock = [0.0]

    def request(layout, op, target, specs, kwargs, what, timeout_s):
        clock[0] += 0.5
        return {"collectives": [], "complete": True, "maps": []}

    monkeypatch.setattr(pool_module.time, "monotonic", lambda: clock[0])
    pool = WorkerPool.__new__(WorkerPool)
    pool.run, pool._trace_left_s, pool.request = SimpleNamespace(reference=None), pool_module.TRACES_S, request
    assert pool.traced_collectives(Layout(2), "basics.f", (), {}, "f()", timeout_s=30)["complete"]
    assert pool._trace_left_s == pool_module.TRACES_S - 0.5
