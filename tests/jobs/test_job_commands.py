"""Commands that alias a job kind take exactly its form's fields and are checked by it."""

import json
from io import StringIO

import pytest
from django.core.management import call_command, get_commands, load_command_class
from django.core.management.base import CommandError

from jobs.commands import JobCommand

ALIASES = {"embed", "train", "predict", "demo_campaign", "fit_predictor", "active_stage"}


def _aliases() -> dict[str, JobCommand]:
    found = {}
    for name, app in get_commands().items():
        command = load_command_class(app, name)
        if isinstance(command, JobCommand):
            found[name] = command
    return found


def test_the_aliases_are_the_commands_named():
    assert set(_aliases()) == ALIASES


@pytest.mark.parametrize("name", sorted(ALIASES))
def test_an_alias_takes_its_kinds_form_fields_and_nothing_else(name):
    command = _aliases()[name]
    parser = command.create_parser("manage.py", name)
    options = {
        action.dest
        for action in parser._actions
        if action.option_strings and action.dest not in {"help", "format", "version"}
    }
    django_own = {"verbosity", "settings", "pythonpath", "traceback", "no_color"}
    django_own |= {"force_color", "skip_checks"}
    assert options - django_own == set(command.kind.form.base_fields)
    assert command.kind.name.replace("-", "_") == name  # a command's name has no hyphen


@pytest.mark.django_db
def test_an_alias_refuses_with_the_forms_messages():
    with pytest.raises(CommandError, match="^predict: dataset: no dataset named 'ghost'"):
        call_command("predict", dataset="ghost", model="m", stdout=StringIO())
    with pytest.raises(CommandError, match="k: Ensure this value is greater than or equal to 1"):
        call_command("predict", dataset="ghost", model="m", k=0, stdout=StringIO())


@pytest.mark.django_db
def test_an_alias_runs_its_kind_and_prints_the_result_or_its_json():
    from retrieval.encoders.service import register_encoder
    from tests.factories import query_dataset

    dataset, _, _ = query_dataset("aliases")
    register_encoder(dataset, "r", "random")
    out = StringIO()
    call_command("embed", dataset="aliases", model="r", device="cpu", stdout=out)
    assert out.getvalue().startswith("Embedded 6 captions and 6 videos with 'r'")
    out = StringIO()
    call_command("predict", "--dataset=aliases", "--model=r", "--k=3", "--format=json", stdout=out)
    result = json.loads(out.getvalue())
    assert (result["run"], result["depth"], result["queries"]) == ("r", 3, 6)
    assert result["index"] == "exact"
