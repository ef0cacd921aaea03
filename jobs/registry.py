"""The kinds of background job the apps offer, by name.

Each app declares its kinds in its own ``jobs`` module (imported when the app is ready),
so this app knows none of them: a kind names the function that does the work, the form
that checks its arguments, the queue it runs on ("gpu" for work that wants a GPU), and the
permission needed to start it.
"""

from collections.abc import Callable
from dataclasses import dataclass, field

from django import forms

from config import roles

QUEUES = ("default", "gpu", "media", "live")
GENERIC_RESULT = "jobs/results/generic.html"
RESEARCH = roles.START_RESEARCH_JOB
ADMIN = roles.START_ADMIN_JOB


@dataclass(frozen=True)
class JobKind:
    """A kind of job: ``run(reporter, **arguments)`` does the work and returns a summary.

    ``form`` validates arguments from a page or the command line into JSON values;
    a user error (:func:`jobs.tasks.user_message`) is shown as the job's error, anything
    else as an internal error (traceback for admins).

    ``atomic`` kinds run in one transaction with the row that records their success, so
    their writes and the outcome the job reports stand or fall together (an import that
    committed its rows and then failed to build its summary said "failed"). Their progress
    is only seen by others once they end, so it suits work that writes all or nothing anyway.

    A succeeded job's page shows its result through ``result_template``, given ``result``,
    ``arguments`` and whatever ``result_context(arguments, result)`` adds (links, table rows),
    so each kind tells its outcome in words with links to what it made; kinds without one
    get :data:`GENERIC_RESULT`, a table of the result's fields. ``result_context`` must
    accept results of older versions of the kind (read keys with ``.get``).
    """

    name: str
    title: str
    run: Callable[..., dict | None]
    form: type[forms.Form]
    queue: str = "default"
    permission: str = RESEARCH
    describe: Callable[[dict], str] = field(default=lambda arguments: "")
    atomic: bool = False
    result_template: str = ""
    result_context: Callable[[dict, dict], dict] = field(default=lambda arguments, result: {})
    lane: str = "jobs"
    """The in-process backend's thread this kind runs on (:mod:`jobs.backends`): ``figures``
    for the quick refreshes of stored figures, which must not wait behind long jobs."""
    joins: bool = False
    """Starting this kind while a job of it with the same arguments is queued or running
    gives that job instead of a second one (:func:`jobs.runner.create`): for work whose
    result replaces the last, such as a campaign's figures, where ten clicks or ten submits
    want one computation, not ten in a row."""
    form_url: str = ""
    """The URL name of a page that starts this kind in place of the generic form on the job
    list (``/jobs/?kind=`` goes there, its other query values passed on); the form still
    checks every page's, the CLI's and the API's values."""

    def __post_init__(self) -> None:
        if self.queue not in QUEUES:
            raise ValueError(f"job kind {self.name!r}: unknown queue {self.queue!r}")


_KINDS: dict[str, JobKind] = {}


def register(kind: JobKind) -> JobKind:
    """Make ``kind`` available to pages, the CLI and workers (idempotent by name)."""
    _KINDS[kind.name] = kind
    return kind


def get_kind(name: str) -> JobKind:
    """The kind called ``name``; KeyError names the known ones."""
    try:
        return _KINDS[name]
    except KeyError:
        known = ", ".join(sorted(_KINDS)) or "none"
        raise KeyError(f"unknown job kind {name!r} (known: {known})") from None


def kinds() -> list[JobKind]:
    """Every registered kind, by name."""
    return [_KINDS[name] for name in sorted(_KINDS)]


def lane_of(name: str) -> str:
    """The lane of the kind called ``name`` (the default lane for a kind no longer known)."""
    found = _KINDS.get(name)
    return found.lane if found is not None else "jobs"
