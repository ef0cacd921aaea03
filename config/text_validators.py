"""The text rule (:mod:`config.text_rule`) as a Django validator, for forms and serializers."""

from django.core.exceptions import ValidationError

from config.text_rule import text_problem


class TextValidator:
    """``TextValidator("pause reason", 200)`` for a line, ``lines=True`` for a multi-line text."""

    def __init__(self, what: str, max_length: int, lines: bool = False) -> None:
        self.what, self.max_length, self.lines = what, max_length, lines

    def __call__(self, value: str) -> None:
        problem = text_problem(value, self.max_length, self.lines)
        if problem is not None:
            raise ValidationError(f"The {self.what} {problem}.", code="invalid_text")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TextValidator) and vars(self) == vars(other)

    def __hash__(self) -> int:
        return hash((self.what, self.max_length, self.lines))
