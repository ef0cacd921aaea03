"""An in-process task backend that runs tasks on a background thread.

The embedded default: ``make run`` needs no queue and no worker, yet a page that starts a
job returns at once and the job page shows it progress. Tasks run one at a time in the
web process, in order; they are lost if the process stops, which the job's heartbeat
reveals (see :mod:`jobs.progress`). Deployments use a real queue and worker processes.
"""

import queue
import threading

from django.db import connections
from django_tasks.backends.immediate import ImmediateBackend
from django_tasks.base import TaskResult, TaskResultStatus
from django_tasks.utils import get_random_id


class ThreadBackend(ImmediateBackend):
    """Like the immediate backend, but tasks run on one daemon thread after ``enqueue``."""

    def __init__(self, alias: str, params: dict):
        super().__init__(alias, params)
        self._queue: queue.Queue[TaskResult] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def enqueue(self, task, args, kwargs) -> TaskResult:
        self.validate_task(task)
        result = TaskResult(
            task=task,
            id=get_random_id(),
            status=TaskResultStatus.READY,
            enqueued_at=None,
            started_at=None,
            last_attempted_at=None,
            finished_at=None,
            args=args,
            kwargs=kwargs,
            backend=self.alias,
            errors=[],
            worker_ids=[],
        )
        _hold_job(args)
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._work, name="firepool-jobs")
                self._thread.daemon = True
                self._thread.start()
        self._queue.put(result)
        return result

    def _work(self) -> None:
        while True:
            result = self._queue.get()
            try:
                self._execute_task(result)
            finally:
                connections.close_all()
                self._queue.task_done()

    def drain(self) -> None:
        """Wait until every task enqueued here has run: a command's process calls it before
        it exits, so the jobs it queued (a new label set's figures) are not lost with it."""
        self._queue.join()


def _hold_job(args) -> None:
    """Keep a queued job's heartbeat fresh while it waits in this process's queue."""
    from django.utils import timezone

    from jobs.models import Job
    from jobs.progress import beater

    if args and isinstance(args[0], int):
        Job.objects.filter(pk=args[0]).update(heartbeat_at=timezone.now())
        beater.hold(args[0])
