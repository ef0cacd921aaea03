"""The text rule (:mod:`config.text_rule`) as a Django validator, for forms and serializers."""

from dataclasses import dataclass

from django.core.exceptions import ValidationError

from config.text_rule import text_problem


@dataclass(frozen=True)
class TextValidator:
    """``TextValidator("pause reason", 200)`` for a line, ``lines=True`` for a multi-line text."""

    what: str
    max_length: int
    lines: bool = False

    def __call__(self, value: str) -> None:
        problem = text_problem(value, self.max_length, self.lines)
        if problem is not None:
            raise ValidationError(f"The {self.what} {problem}.", code="invalid_text")
