"""Where an annotator stands in a campaign: one state, with its heading, colour and next step.

The judging page, the home list and the judging API all show :func:`state_of`'s state, so
they never disagree; when several hold, the first in :data:`PRECEDENCE` wins. An automatic
pause's reason is written by :func:`speed_reason` or :func:`gold_reason`, and
:func:`pause_rule` reads the rule back from it (any other reason is an admin's).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime

CLOSED = "campaign_closed"
CAMPAIGN_PAUSED = "campaign_paused"
PAUSED_BY_ADMIN = "paused_by_admin"
PAUSED_BY_RULE = "paused_by_rule"
QUALIFICATION_FAILED = "qualification_failed"
QUALIFYING = "qualifying"
FINISHED = "finished"
NOTHING_FREE = "nothing_free"
JUDGING = "judging"

PRECEDENCE = (
    CLOSED,
    CAMPAIGN_PAUSED,
    PAUSED_BY_ADMIN,
    PAUSED_BY_RULE,
    QUALIFICATION_FAILED,
    QUALIFYING,
    FINISHED,
    NOTHING_FREE,
    JUDGING,
)
"""Every state, the one that wins first."""

SPEED_RULE = "speed"
GOLD_RULE = "gold"
_SPEED_PREFIX = "a median of "
_GOLD_PREFIX = "gold accuracy "

WARN_AFTER = 3
"""Too-fast answers among the recent ones after which the annotator is warned."""
SLOW_DOWN = "Slow down: videos must be watched"


def speed_reason(median: float, floor: float) -> str:
    """The reason the speed rule records when it pauses someone."""
    return (
        f"{_SPEED_PREFIX}{median:.1f} s per judgement is below {floor:.0f} s: "
        "too fast to have watched the videos"
    )


def gold_reason(correct: int, total: int, threshold: float) -> str:
    """The reason the gold-accuracy rule records when it pauses someone."""
    return f"{_GOLD_PREFIX}{correct}/{total} is too far below {threshold:.0%} to be chance"


def pause_rule(reason: str) -> str | None:
    """Which automatic rule paused someone, read from the pause's reason (None: an admin)."""
    if reason.startswith(_SPEED_PREFIX):
        return SPEED_RULE
    if reason.startswith(_GOLD_PREFIX):
        return GOLD_RULE
    return None


def speed_warning(recent: list[float], floor: float) -> str | None:
    """:data:`SLOW_DOWN` once :data:`WARN_AFTER` recent answers came faster than the floor."""
    fast = sum(1 for seconds in recent if seconds < floor)
    return SLOW_DOWN if fast >= WARN_AFTER else None


@dataclass(frozen=True)
class Inputs:
    """What decides the state. ``finished``: nothing is left for anyone; ``left_for_me``:
    labels are still needed on pairs this annotator may judge; ``serving``: whether a pair is
    on screen (None: unknown, work left then means "judging")."""

    campaign_status: str
    paused_at: datetime | None = None
    pause_reason: str = ""
    qualification_required: bool = False
    admitted: bool = True
    qualification_done: int = 0
    qualification_total: int = 0
    tries_used: int = 0
    tries: int = 0
    last_score: float | None = None
    retry_at: datetime | None = None
    out_of_tries: bool = False
    finished: bool = False
    budget_spent: bool = False
    left_for_me: bool = True
    serving: bool | None = None


@dataclass(frozen=True)
class State:
    """One annotator's state in one campaign: ``tone`` is the CSS class ``state-<tone>``,
    ``can_judge`` whether a pair may be judged now, ``action`` the list's button label."""

    key: str
    heading: str
    message: str
    next_step: str
    tone: str
    can_judge: bool
    action: str = ""
    rule: str | None = None
    since: datetime | None = None
    retry_at: datetime | None = None
    polls: bool = False
    """Whether the judging page should ask again shortly (something may free up)."""

    def to_json(self) -> dict:
        moments = {"since": self.since, "retry_at": self.retry_at}
        return asdict(self) | {k: v and v.isoformat() for k, v in moments.items()}


def _when(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:%M UTC")


def _score(score: float | None) -> str:
    return "" if score is None else f"You scored {round(100 * score)}%. "


def state_of(inputs: Inputs) -> State:
    """The annotator's state: the first of :data:`PRECEDENCE` that holds."""
    i = inputs
    if i.campaign_status == "closed":
        return State(
            CLOSED,
            "Campaign closed",
            "This campaign is closed: it serves no pairs and takes no judgements.",
            "Pick another campaign from your list.",
            "stop",
            False,
        )
    if i.campaign_status != "active":
        return State(
            CAMPAIGN_PAUSED,
            "Campaign paused",
            "An admin has paused this campaign: it serves no pairs and takes no judgements, "
            "undos or escalations until it is made active again.",
            "Come back later; your work so far is kept.",
            "warn",
            False,
            polls=True,
        )
    if i.paused_at is not None:
        return _paused(i)
    if i.qualification_required and not i.admitted:
        return _qualification(i)
    if i.finished:
        why = (
            "its label budget is used up"
            if i.budget_spent
            else "every pair has all the labels it needs"
        )
        return State(
            FINISHED,
            "Finished",
            f"Nothing is left to judge here, for anyone: {why}. Thank you.",
            "Pick another campaign from your list.",
            "done",
            False,
        )
    if not i.left_for_me:
        return State(
            FINISHED,
            "Nothing left for you",
            "Nothing is left for you here: the labels still needed are on pairs you have "
            "judged already, and need someone else.",
            "Pick another campaign from your list.",
            "done",
            False,
        )
    if i.serving is False:
        return State(
            NOTHING_FREE,
            "No pair is free right now",
            "Other annotators hold the pairs still to judge; they come back if not judged in time.",
            "Wait here: the page checks again shortly.",
            "info",
            False,
            polls=True,
        )
    return State(
        JUDGING,
        "Judging",
        "Is every element of the caption in the video?",
        "Judge the pair on screen.",
        "ok",
        True,
        action="Continue judging",
    )


def _paused(i: Inputs) -> State:
    """Paused in the campaign, by an admin or by a rule (speed or gold accuracy)."""
    rule = pause_rule(i.pause_reason)
    if rule is None:
        reason = f": {i.pause_reason}" if i.pause_reason else ""
        return State(
            PAUSED_BY_ADMIN,
            "Paused by an admin",
            f"An admin paused you in this campaign on {_when(i.paused_at)}{reason}.",
            "Ask an admin to reinstate you.",
            "stop",
            False,
            since=i.paused_at,
        )
    what, todo = {
        SPEED_RULE: ("too fast", "Watch each video before you answer"),
        GOLD_RULE: ("gold accuracy too low", "Re-read the guidelines"),
    }[rule]
    return State(
        PAUSED_BY_RULE,
        f"Paused: {what}",
        f"The {rule} rule paused you in this campaign on {_when(i.paused_at)}: {i.pause_reason}.",
        f"{todo}; ask an admin to reinstate you.",
        "stop",
        False,
        rule=rule,
        since=i.paused_at,
    )


def _qualification(i: Inputs) -> State:
    """Not admitted yet where the campaign asks for qualification."""
    if i.out_of_tries:
        return State(
            QUALIFICATION_FAILED,
            "Qualification failed",
            f"{_score(i.last_score)}You have used all {i.tries} tries (0 of {i.tries} left).",
            "Ask an admin to admit you by hand.",
            "stop",
            False,
        )
    if i.retry_at is not None:
        left = max(i.tries - i.tries_used, 0)
        return State(
            QUALIFICATION_FAILED,
            "Qualification not passed",
            f"{_score(i.last_score)}You may try again at {_when(i.retry_at)} "
            f"({left} of {i.tries} tries left).",
            "Read the guidelines meanwhile; come back at that time.",
            "warn",
            False,
            retry_at=i.retry_at,
            polls=True,
        )
    attempt = min(max(i.tries_used, 1), i.tries) if i.tries else 1
    if i.qualification_total == 0:
        return State(
            QUALIFYING,
            "Qualification not ready",
            "This campaign asks for qualification but has no gold pairs to train on yet.",
            "Ask an admin to add gold pairs.",
            "warn",
            False,
        )
    return State(
        QUALIFYING,
        f"Qualifying: {i.qualification_done} of {i.qualification_total}",
        f"Answer {i.qualification_total} training pairs; after each you see the right "
        f"answer and why (try {attempt} of {i.tries}).",
        "Judge the pair on screen.",
        "info",
        True,
        action="Continue qualification" if i.qualification_done else "Start qualification",
    )
