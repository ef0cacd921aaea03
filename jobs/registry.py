"""The kinds of background job the apps offer, by name: each app registers its own from its
``jobs`` module, so this app knows none of them."""

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
    """A kind of job: ``run(reporter, **arguments)`` does the work and returns a summary;
    ``form`` validates its arguments into JSON values. ``atomic`` kinds run in one transaction
    with the row recording their success, so writes and outcome stand or fall together. A
    succeeded job's page renders ``result_template`` (default :data:`GENERIC_RESULT`) with
    ``result_context(arguments, result)``, which must accept older results (``.get``)."""

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
    """The in-process backend's thread this kind runs on (``figures``: not behind long jobs)."""
    joins: bool = False
    """Starting this kind while a job with the same arguments is queued or running gives that
    job instead (:func:`jobs.runner.create`): ten clicks want one computation, not ten."""
    form_url: str = ""
    """The URL name of a page that starts this kind in place of the job list's generic form."""

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


def find_kind(name: str | None) -> JobKind | None:
    """The kind called ``name``, or None for a kind no longer (or never) known."""
    return _KINDS.get(name)


def lane_of(name: str | None) -> str:
    """The lane of the kind called ``name`` (the default lane for a kind no longer known)."""
    return getattr(find_kind(name), "lane", "jobs")
