"""The one base class for errors a user can fix; each boundary turns it into a message.

Services raise a subclass of :class:`UserError` when the input, not the code, is wrong;
commands (:class:`jobs.commands.BaseCommand`), pages and the API
(:mod:`config.error_handling`) and jobs (:mod:`jobs.tasks`) each show its message in one
place. Anything else, a numpy ``ValueError`` included, is a bug and is reported as an
internal error. It lives in ``config``, the project layer every app already imports (as
``config.roles``): ``retrieval``, ``annotation`` and ``jobs`` all raise or catch it and none
may import an app above it. The module imports nothing, so pure modules may use it too.
"""


class UserError(Exception):
    """A request the user must change; ``str(error)`` is the message they see.

    ``code`` names the problem for API clients and ``status`` is the HTTP status that
    fits it (400 unless a subclass or the raiser says otherwise).
    """

    code = "invalid"
    status = 400

    def __init__(self, *args: object, code: str | None = None, status: int | None = None) -> None:
        super().__init__(*args)
        if code is not None:
            self.code = code
        if status is not None:
            self.status = status


class NotFound(UserError):
    """Nothing goes by the name the user gave (a dataset, model, run, label set or campaign);
    the message lists names that do."""

    code = "not_found"
    status = 404
