"""An in-process task backend that runs tasks on background threads, one lane per kind of work:
``make run`` needs no queue or worker, and a page starting a job returns at once. A lost task
shows by its heartbeat (:mod:`jobs.progress`). With one thread for all, a campaign's figures
waited minutes behind long jobs; the figures' own lane keeps them current."""

import queue
import threading

from django.db import connections
from django_tasks.backends.immediate import ImmediateBackend
from django_tasks.base import TaskResult, TaskResultStatus
from django_tasks.utils import get_random_id

DEFAULT_LANE = "jobs"


class ThreadBackend(ImmediateBackend):
    """The immediate backend with tasks run after ``enqueue`` on a daemon thread per lane."""

    def __init__(self, alias: str, params: dict):
        super().__init__(alias, params)
        self._lanes: dict[str, tuple[queue.Queue[TaskResult], threading.Thread]] = {}
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
        lane = _hold_job(args)
        with self._lock:
            found = self._lanes.get(lane)
            if found is None or not found[1].is_alive():
                waiting: queue.Queue[TaskResult] = found[0] if found else queue.Queue()
                thread = threading.Thread(
                    target=self._work, args=(waiting,), name=f"firepool-{lane}", daemon=True
                )
                self._lanes[lane] = (waiting, thread)
                thread.start()
            self._lanes[lane][0].put(result)
        return result

    def _work(self, waiting: queue.Queue) -> None:
        while True:
            result = waiting.get()
            try:
                self._execute_task(result)
            finally:
                connections.close_all()
                waiting.task_done()

    def drain(self) -> None:
        """Wait until every task enqueued here has run (a command, before its process exits)."""
        while True:
            with self._lock:
                waiting = [lane for lane, _ in self._lanes.values() if lane.unfinished_tasks]
            if not waiting:
                return
            for lane in waiting:  # a task may queue another, in any lane: look again
                lane.join()


def _hold_job(args) -> str:
    """Keep a queued job's heartbeat fresh while it waits here; the lane its kind runs in."""
    from django.utils import timezone

    from jobs.models import Job
    from jobs.progress import beater
    from jobs.registry import lane_of

    if not (args and isinstance(args[0], int)):
        return DEFAULT_LANE
    Job.objects.filter(pk=args[0]).update(heartbeat_at=timezone.now())
    beater.hold(args[0])
    return lane_of(Job.objects.filter(pk=args[0]).values_list("kind", flat=True).first())
