"""The base classes of every management command of the apps: :class:`BaseCommand` turns a
:class:`config.errors.UserError` into a ``CommandError``, and :class:`JobCommand` runs one job
kind here and now with its form's fields as options, checked by that form."""

import contextlib
import json
import sys

from django import forms
from django.core.management import base
from django.db import transaction

from config.errors import UserError
from jobs.progress import ConsoleReporter
from jobs.registry import JobKind, get_kind
from jobs.runner import check_arguments, finish_in_process


class BaseCommand(base.BaseCommand):
    """Django's ``BaseCommand``, with user errors ending as ``CommandError`` (their message)."""

    finish_jobs = True
    """Whether :meth:`execute` waits for the jobs ``handle`` queued in this process."""

    def wrote_json(self, options: dict, data, **dumps) -> bool:
        """With ``--format json``, write ``data`` as JSON (``json.dumps`` with ``dumps``) and
        say so; else write nothing."""
        if options.get("format") != "json":
            return False
        self.stdout.write(json.dumps(data, **dumps))
        return True

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


def _option_help(field: forms.Field) -> str:
    """The field's help as argparse prints it (a ``%`` doubled: argparse formats the text)."""
    text = str(field.help_text or "")
    if isinstance(field, forms.ChoiceField) and field.choices:
        named = ", ".join(str(value) for value, _ in field.choices if value != "")
        several = isinstance(field, forms.MultipleChoiceField)
        named = f"{'Any of' if several else 'One of'}: {named}."
        text = f"{text} {named}" if text else named
    initial = field.initial
    if isinstance(initial, list | tuple):  # a multiple choice: given comma-separated
        initial = ",".join(map(str, initial))
    if initial not in (None, ""):
        text = f"{text} Default: {initial}."
    elif field.required:
        text += " Required."
    return text.strip().replace("%", "%%")


def add_form_options(
    parser, form_class: type[forms.Form], skip: tuple[str, ...] = (), initial: bool = True
) -> None:
    """A command option per field of ``form_class`` (``--batch-size`` for ``batch_size``, a flag
    for a yes/no field); ``initial``: the field's initial value is the option's default."""
    for name, field in form_class.base_fields.items():
        if name in skip:
            continue
        option = "--" + name.replace("_", "-")
        if isinstance(field, forms.BooleanField):
            parser.add_argument(option, dest=name, action="store_true", help=_option_help(field))
        else:
            default = field.initial if initial else None
            parser.add_argument(option, dest=name, default=default, help=_option_help(field))


def given_options(form_class: type[forms.Form], options: dict) -> dict:
    """The options that fill ``form_class``'s fields (an unset option or flag is absent; 0
    is a value, so not ``in (None, False)``)."""
    return {
        name: options[name]
        for name in form_class.base_fields
        if options.get(name) is not None and options.get(name) is not False
    }


def check_options(form_class: type[forms.Form], options: dict) -> forms.Form:
    """``form_class`` bound to the command's options and valid, or a ``CommandError`` naming
    each bad option (``--max-labels: ...``)."""
    form = form_class(data=given_options(form_class, options))
    if not form.is_valid():
        raise base.CommandError(
            "; ".join(
                " ".join(str(m) for m in messages)
                if name == forms.forms.NON_FIELD_ERRORS
                else f"--{name.replace('_', '-')}: {' '.join(str(m) for m in messages)}"
                for name, messages in form.errors.items()
            )
        )
    return form


class JobCommand(BaseCommand):
    """Run the job kind :attr:`kind_name` here with its form's fields as options, a progress bar
    on stderr, and :meth:`summary`'s line or, with ``--format json``, the job's result."""

    kind_name = ""

    @property
    def kind(self) -> JobKind:
        return get_kind(self.kind_name)

    def add_arguments(self, parser) -> None:
        add_form_options(parser, self.kind.form)
        parser.add_argument("--format", choices=["table", "json"], default="table")

    def handle(self, *args, **options) -> None:
        kind = self.kind
        arguments = check_arguments(kind, given_options(kind.form, options))
        quiet = options["verbosity"] == 0 or options["format"] == "json"
        reporter = ConsoleReporter(sys.stderr, quiet=quiet or not sys.stderr.isatty())
        try:
            with transaction.atomic() if kind.atomic else contextlib.nullcontext():
                result = kind.run(reporter, **arguments) or {}
        finally:
            reporter.close()
        if not self.wrote_json(options, result, default=str):
            self.stdout.write(self.summary(result, arguments))

    def summary(self, result: dict, arguments: dict) -> str:
        """The outcome in a line for people (the result's fields by default)."""
        return ", ".join(f"{name} {value}" for name, value in result.items())
