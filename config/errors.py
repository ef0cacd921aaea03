"""The one base class for errors a user can fix, and how each boundary shows them.

Services raise a subclass of :class:`UserError` when the input, not the code, is wrong;
a command, a page, the API and a job each turn it into a message in one place
(:class:`config.commands.Command`, :mod:`config.error_handling` for pages and the API,
and :mod:`jobs.runner`). Anything else, a numpy ``ValueError`` included, is a bug and is
reported as an internal error. It lives in ``config``, the project layer every app already
imports (``config.roles``), because ``retrieval``, ``annotation`` and ``jobs`` all raise or
catch it and none of them may import the others upwards.
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
