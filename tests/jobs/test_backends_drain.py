"""The in-process backend's ``drain``: a command's process waits for the jobs it queued."""

import time

from jobs.backends import ThreadBackend
from jobs.runner import finish_in_process


def test_drain_waits_for_every_enqueued_task(monkeypatch):
    backend = ThreadBackend("drain-test", {"QUEUES": ["default"]})
    ran = []

    def execute(result):
        time.sleep(0.05)
        ran.append(result)

    monkeypatch.setattr(backend, "_execute_task", execute)
    monkeypatch.setattr(backend, "validate_task", lambda task: None)
    monkeypatch.setattr("jobs.backends._hold_job", lambda args: None)
    for _ in range(3):
        backend.enqueue(object(), (), {})
    backend.drain()
    assert len(ran) == 3  # all run, none lost
    finish_in_process()  # the settings' backends: nothing queued, returns at once


def test_a_figures_job_runs_while_a_long_job_holds_the_other_lane(monkeypatch):
    """Issue 38 §2: with one thread, a campaign's figures waited behind every other job (a
    model build: minutes); each lane has its own thread, in order within it."""
    import threading

    backend = ThreadBackend("lanes-test", {"QUEUES": ["default"]})
    release, ran = threading.Event(), []

    def execute(result):
        if result.args[0] == "long":
            assert release.wait(10)
        ran.append(result.args[0])

    monkeypatch.setattr(backend, "_execute_task", execute)
    monkeypatch.setattr(backend, "validate_task", lambda task: None)
    lanes = {"long": "jobs", "later": "jobs", "figures-1": "figures", "figures-2": "figures"}
    monkeypatch.setattr("jobs.backends._hold_job", lambda args: lanes[args[0]])
    for name in ("long", "later", "figures-1", "figures-2"):
        backend.enqueue(object(), (name,), {})
    for _ in range(200):
        if len(ran) == 2:
            break
        time.sleep(0.01)
    assert ran == ["figures-1", "figures-2"]  # the long job still holds its lane
    release.set()
    backend.drain()
    assert ran == ["figures-1", "figures-2", "long", "later"]


def test_the_lanes_are_the_kinds():
    from jobs.registry import get_kind, lane_of

    assert get_kind("campaign-figures").lane == lane_of("campaign-figures") == "figures"
    assert lane_of("build_model") == "jobs" and lane_of("no-such-kind") == "jobs"
