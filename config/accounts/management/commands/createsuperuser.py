"""Django's ``createsuperuser``, refusing a username another account has in any letter case,
and one taken meanwhile by another process, as an error instead of a traceback."""

from django.contrib.auth.management.commands import createsuperuser
from django.core.management.base import CommandError
from django.db import IntegrityError

from config.accounts.names import UsernameTaken, case_twin


class Command(createsuperuser.Command):
    def _validate_username(self, username, verbose_field_name, database):
        error = super()._validate_username(username, verbose_field_name, database)
        if error is None and username:
            twin = case_twin(str(username), using=database)
            if twin is not None:
                return f"Error: {UsernameTaken(str(username), twin)}."
        return error

    def handle(self, *args, **options):
        try:
            super().handle(*args, **options)
        except IntegrityError:
            username = options.get(self.UserModel.USERNAME_FIELD) or "that username"
            raise CommandError(
                f"{UsernameTaken(str(username))} (made by someone else meanwhile); "
                "nothing was created"
            ) from None
