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
