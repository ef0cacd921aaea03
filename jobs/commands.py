"""The base class of every management command of the apps.

Django turns a ``CommandError`` into a one-line message and exit status 1 in one place
(``run_from_argv``); this class turns a :class:`config.errors.UserError` raised anywhere
below ``handle`` into one, so no command catches service errors itself.
"""

from django.core.management import base

from config.errors import UserError
from jobs.runner import finish_in_process


class BaseCommand(base.BaseCommand):
    """Django's ``BaseCommand``, with user errors ending as ``CommandError`` (their message).

    Commands subclass it under its Django name, so ``class Command(BaseCommand)`` reads
    as everywhere else in Django.
    """

    finish_jobs = True
    """Whether :meth:`execute` waits for the jobs ``handle`` queued in this process."""

    def execute(self, *args, **options):
        try:
            done = super().execute(*args, **options)
        except UserError as exc:
            raise base.CommandError(str(exc)) from exc
        # Jobs the command queued in this process (a new label set's figures) finish before
        # it exits, rather than being lost with it; a stopped command does not wait.
        if self.finish_jobs:
            finish_in_process()
        return done
