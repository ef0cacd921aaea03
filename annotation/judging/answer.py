"""What an annotator gets back from each judging request: one call per request returns one
typed answer (the assignment, progress, qualification and state), which the API renders with
one serializer (``annotation.api.serializers.AssignmentSerializer``).

Every request that moves the annotator on (next, submit, undo, escalate) ends in
:func:`answer`, so the judging page sees the same fields whatever it asked.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from uuid import UUID

from annotation.gold import tasks as gold_queue
from annotation.judging import escalations, queue, submit
from annotation.models import Campaign
from annotation.people.state import State
from annotation.people.state_service import judging_state
from retrieval.media.service import segment_label


@dataclass(frozen=True)
class JudgingAnswer:
    """The pair to judge now, the one to preload, the annotator's progress, whether nothing
    can come to them any more, their qualification, why they are paused and their state."""

    campaign: Campaign
    current: queue.Task | None
    upcoming: queue.Task | None
    progress: queue.Progress
    finished: bool
    qualification: gold_queue.Qualification
    paused: str | None
    state: State


@dataclass(frozen=True)
class SubmitAnswer(JudgingAnswer):
    """A :class:`JudgingAnswer` after a submit, with the stored judgement's id, whether this
    request stored it (False: a retry), a qualification answer's feedback and a warning when
    the answer came too fast."""

    judgement: UUID | None = None
    created: bool = False
    feedback: gold_queue.Feedback | None = None
    warning: str | None = None


def _shown(task: queue.Task | None, campaign: Campaign) -> queue.Task | None:
    """The task with what the page shows beside the pair: where its segment sits, and the
    caption's role spans where the campaign shows them."""
    if task is None:
        return None
    roles = (task.pair.caption.role_spans or []) if campaign.shows_roles else []
    return replace(task, roles=roles, segment=segment_label(task.pair.video))


def answer(campaign: Campaign, user, got: queue.Assignment, **submitted) -> JudgingAnswer:
    """The answer after ``got`` (a :class:`SubmitAnswer` with ``submitted``'s fields).
    Finished only when nothing can come to this annotator any more; with no current pair
    but work left (others hold the leases) the page waits and polls."""
    finished = got.current is None and not queue.has_work_for(campaign, user)
    qualification = got.qualification or gold_queue.qualification(campaign, user)
    return (SubmitAnswer if submitted else JudgingAnswer)(
        campaign=campaign,
        current=_shown(got.current, campaign),
        upcoming=_shown(got.upcoming, campaign),
        progress=queue.progress(campaign, user),
        finished=finished,
        qualification=qualification,
        paused=got.paused,
        state=judging_state(campaign, got, qualification, work_left=not finished),
        **submitted,
    )


def next_task(campaign: Campaign, user) -> JudgingAnswer:
    """Lease the pair to judge now and the one to preload (the same while the leases last)."""
    return answer(campaign, user, queue.assign(campaign, user))


def submit_label(
    campaign: Campaign,
    user,
    pair: int,
    label: str,
    uuid: UUID,
    seconds: float | None = None,
    seconds_played: float | None = None,
) -> SubmitAnswer:
    """Store a judgement (idempotent by its UUID: :func:`annotation.judging.submit.submit`)
    and answer with the next assignment, showing the campaign as the answer read it. The
    parameters are the API's fields (:class:`annotation.api.serializers.SubmitSerializer`)."""
    result = submit.submit(
        user, pair, label, uuid, seconds, campaign=campaign, played=seconds_played
    )
    return answer(
        result.campaign or campaign,
        user,
        result.assignment,
        judgement=result.judgement.uuid,
        created=result.created,
        feedback=result.feedback,
        warning=result.warning,
    )


def undo_label(campaign: Campaign, user) -> JudgingAnswer:
    """Take back the annotator's latest answer in the campaign and show its task again."""
    return answer(campaign, user, submit.undo(user, campaign))


def escalate_pair(
    campaign: Campaign, user, pair: int, uuid: UUID, kind: str, media_error: str, reason: str = ""
) -> JudgingAnswer:
    """Send a pair to the admins (or report its video broken) and answer with what is next.
    The parameters are the API's fields (``annotation.api.serializers.EscalateSerializer``)."""
    got = escalations.escalate(user, pair, reason, uuid, kind=kind, media_error=media_error)
    return answer(campaign, user, got)
