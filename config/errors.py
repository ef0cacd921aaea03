"""The one base class for errors a user can fix; commands, pages, the API and jobs each turn
it into a message in one place (anything else is a bug). It imports nothing, so every app
and pure module may use it."""


class UserError(Exception):
    """A request the user must change: ``str(error)`` is the message they see, ``code`` names
    the problem for API clients and ``status`` is its HTTP status."""

    code = "invalid"
    status = 400

    def __init__(self, *args: object, code: str | None = None, status: int | None = None) -> None:
        super().__init__(*args)
        if code is not None:
            self.code = code
        if status is not None:
            self.status = status


class NotFound(UserError):
    """Nothing goes by the name the user gave; the message lists names that do."""

    code = "not_found"
    status = 404
