"""The judging path's errors and the rule for a retried answer: a leaf every judging module
imports, importing none of them."""

from config.errors import UserError


class AssignmentError(UserError):
    """A request the queue cannot honour; ``code`` tells clients what happened.

    The status fits the code: 404 for a pair or campaign not found, 400 for invalid
    input, 409 for every conflict with the queue's state (an expired lease, an undo
    window passed, too many escalations, ...).
    """

    STATUS = {"not_found": 404, "invalid": 400}

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message, code=code, status=self.STATUS.get(code, 409))
        self.message = message


ID_USED = "this id was already used for another answer; send a new id with a new answer"


def _same_figure(stored: float | None, sent: float | None) -> bool:
    return (stored is None) == (sent is None) and (sent is None or float(stored) == float(sent))


def same_answer(
    stored, annotator_id: int, label: str, seconds: float | None, played: float | None = None
) -> bool:
    """Whether a stored answer (a judgement or a gold answer) is the one a retry resends:
    the same annotator, label, seconds and seconds played (its pair the caller compares)."""
    return (
        stored.annotator_id == annotator_id
        and stored.label == label
        and _same_figure(stored.seconds, seconds)
        and _same_figure(stored.seconds_played, played)
    )
