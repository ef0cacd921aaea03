"""A campaign's settings: one typed object, its JSON round trip and checks, the one writer,
the gold companion column and its data migration, and one spec from every entry point."""

import io
import json
from dataclasses import replace

import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from annotation.campaigns.forms import CampaignSettingsForm
from annotation.campaigns.settings import (
    DEFAULT_GOLD_RATE,
    DEFAULT_THRESHOLD,
    AutoLabel,
    CampaignSettings,
    EstimationSample,
    GoldSettings,
    JudgingSettings,
    QueueOrder,
    SampleRequest,
    SettingsError,
)
from annotation.campaigns.spec import CampaignSpec
from annotation.gold import tasks as gold_queue
from annotation.judging import statements
from annotation.models import Campaign
from config.errors import UserError
from jobs.models import Job
from retrieval.models import Dataset
from tests.factories import add_gold, make_campaign, query_dataset, random_run

FULL = CampaignSettings(
    judging=JudgingSettings(strategy="maxmean", ks=(1, 3), p=0.7, budget=40),
    gold=GoldSettings(rate=0.2, qualification=True, training_pairs=12, threshold=0.8, tries=2),
    show_roles=False,
    extends=7,
    estimation_sample=EstimationSample((3, 5), (11, 12, 13), (SampleRequest(3, 1),)),
    queue_order=QueueOrder("bow", 4, 9),
    auto_label=AutoLabel("bow", 0.9, None, 2, 0),
)


@pytest.mark.parametrize(
    "chosen",
    [
        CampaignSettings(),
        FULL,
        CampaignSettings(judging=JudgingSettings(budget=5)),
        CampaignSettings(gold=GoldSettings(floor_seconds=0.0, cooldown_seconds=0)),
    ],
)
def test_settings_round_trip_through_their_json(chosen):
    stored = chosen.to_options()
    assert json.loads(json.dumps(stored)) == stored
    assert CampaignSettings.from_options(stored) == chosen
    assert CampaignSettings.from_options(json.loads(json.dumps(stored))) == chosen


def test_defaults_store_nothing_and_old_rows_still_read():
    assert CampaignSettings().to_options() == {}
    assert CampaignSettings.from_options(None) == CampaignSettings()
    # the layout campaigns stored before the settings had a type
    old = {
        "judging_order": {"strategy": "metric-first", "ks": [1, 5, 10], "p": 0.8},
        "budget": 30,
        "gold": {
            "rate": 0.1,
            "qualification": True,
            "training_pairs": 12,
            "threshold": 0.8,
            "cooldown_seconds": 3600,
            "tries": 3,
        },
        "show_roles": False,
        "extends": 4,
        "estimation_sample": {
            "captions": [2],
            "pairs": [8, 9],
            "draws": [{"requested": 2, "seed": 0}],
        },
    }
    settings = CampaignSettings.from_options(old)
    assert settings.judging == JudgingSettings("metric-first", budget=30)
    assert (settings.gold.rate, settings.gold.training_pairs, settings.gold.threshold) == (
        0.1,
        12,
        0.8,
    )
    assert settings.gold.floor_seconds == 1.0 and not settings.show_roles
    assert settings.extends == 4 and settings.estimation_sample.pairs == (8, 9)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"colour": "red"}, "options: unknown setting colour"),
        ({"gold_of": 3}, "unknown setting gold_of"),
        ({"budget": 0}, "budget: must be between 1 and"),
        ({"budget": "ten"}, "budget: must be an integer"),
        ({"judging_order": {"strategy": "random"}}, "judging_order.strategy: must be one of"),
        ({"judging_order": {"ks": []}}, "judging_order.ks"),
        ({"judging_order": {"p": 1.5}}, "judging_order.p"),
        ({"gold": {"rate": 1.5}}, "gold.rate"),
        ({"gold": {"rate": float("nan")}}, "gold.rate"),
        ({"gold": {"threshold": 0}}, "gold.threshold: must be above 0"),
        ({"gold": {"qualification": "yes"}}, "gold.qualification: must be true or false"),
        ({"gold": {"companion": 3}}, "gold: unknown setting companion"),
        ({"gold": {"tries": 0}}, "gold.tries"),
        ({"show_roles": 0}, "show_roles: must be true or false"),
        ({"extends": "pooled"}, "extends: must be an integer"),
        ({"estimation_sample": {"captions": ["a"]}}, "estimation_sample.captions"),
        ({"estimation_sample": {"draws": [{"requested": 2}]}}, "missing seed"),
        ({"queue_order": {"proxy": "bow"}}, "queue_order: missing pairs_moved"),
        ({"auto_label": 3}, "auto_label: must be an object"),
        ([1], "options: must be an object"),
    ],
)
def test_malformed_settings_are_refused_with_their_path(options, message):
    with pytest.raises(SettingsError, match=message) as caught:
        CampaignSettings.from_options(options)
    assert isinstance(caught.value, UserError)


def test_settings_are_checked_when_built_too():
    with pytest.raises(SettingsError, match="gold.rate"):
        GoldSettings(rate=-0.1)
    with pytest.raises(SettingsError, match="judging_order.strategy"):
        replace(FULL.judging, strategy="nope")


@pytest.mark.django_db
def test_campaign_reads_and_writes_its_settings_through_one_object():
    campaign = make_campaign()
    assert campaign.settings == CampaignSettings() and campaign.options == {}
    assert campaign.settings is campaign.settings  # read once per instance
    campaign.set_settings(replace(FULL, extends=None))
    fresh = Campaign.objects.get(pk=campaign.pk)
    assert fresh.settings == replace(FULL, extends=None)
    assert fresh.shows_roles is False
    campaign.set_settings(CampaignSettings())
    fresh.refresh_from_db()  # a new options value: read again
    assert fresh.settings == CampaignSettings() and fresh.options == {}


@pytest.mark.django_db
def test_the_admin_cannot_store_options_the_settings_refuse():
    campaign = make_campaign()
    campaign.options = {"gold": {"rate": 3}}
    with pytest.raises(ValidationError, match="gold.rate"):
        campaign.full_clean()


# -- the gold companion link -------------------------------------------------------------


@pytest.mark.django_db
def test_the_gold_companion_is_a_column():
    campaign = make_campaign()
    add_gold(campaign, 3, rate=0.5)
    gold_queue.ensure_tasks(campaign)
    companion = Campaign._base_manager.get(gold_of=campaign)
    assert campaign.gold_companion == companion
    assert gold_queue.gold_of(companion) == campaign.pk and gold_queue.gold_of(campaign) is None
    assert campaign.gold_companion.pk == companion.pk
    assert companion.options == {} and "companion" not in campaign.options.get("gold", {})
    assert not Campaign.objects.filter(pk=companion.pk).exists()
    assert (
        statements.campaign(companion.pk) is None and statements.campaign(campaign.pk) == campaign
    )
    pair = companion.pairs.first()
    target = statements.pair_target(pair.pk)
    assert (target.campaign, target.gold_of) == (companion.pk, campaign.pk)
    campaign.delete()  # the hidden companion goes with its campaign
    assert not Campaign._base_manager.filter(pk=companion.pk).exists()


@pytest.mark.django_db(transaction=True)
def test_migration_moves_the_gold_link_out_of_the_json_and_back():
    before = [("annotation", "0013_campaign_gold_of")]
    after = [("annotation", "0014_gold_of_from_options")]
    executor = MigrationExecutor(connection)
    executor.migrate(before)
    old = executor.loader.project_state(before).apps.get_model("annotation", "Campaign")
    dataset = Dataset.objects.create(name="migrated")
    main = old.objects.create(
        dataset_id=dataset.pk,
        name="main",
        options={"budget": 9, "gold": {"rate": 0.2, "companion": None}},
    )
    companion = old.objects.create(
        dataset_id=dataset.pk, name="main · gold tasks", options={"gold_of": main.pk}
    )
    main.options = {"budget": 9, "gold": {"rate": 0.2, "companion": companion.pk}}
    main.save()
    plain = old.objects.create(dataset_id=dataset.pk, name="plain", options={"show_roles": False})

    executor = MigrationExecutor(connection)
    executor.migrate(after)
    new = executor.loader.project_state(after).apps.get_model("annotation", "Campaign")
    rows = {c.name: c for c in new.objects.all()}
    assert rows["main · gold tasks"].gold_of_id == main.pk
    assert rows["main · gold tasks"].options == {}
    assert rows["main"].options == {"budget": 9, "gold": {"rate": 0.2}}
    assert rows["main"].gold_of_id is None and rows["plain"].options == {"show_roles": False}

    executor = MigrationExecutor(connection)
    executor.migrate(before)
    rows = {c.name: c for c in old.objects.all()}
    assert rows["main · gold tasks"].options == {"gold_of": main.pk}
    assert rows["main"].options["gold"] == {"rate": 0.2, "companion": companion.pk}
    assert rows["plain"].pk == plain.pk and rows["plain"].options == {"show_roles": False}
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())


# -- one spec from the form, the job and the command ---------------------------------------

VALUES = {
    "name": "same",
    "depth": 2,
    "seed": 3,
    "judging_order": "metric-first",
    "budget": 25,
    "gold_rate": 0.1,
    "qualification": 8,
    "qualification_threshold": 0.75,
    "show_roles": False,
}


def test_defaults_live_in_the_settings_module():
    spec = CampaignSpec.from_values({"name": "plain"})
    assert spec.settings == CampaignSettings()
    assert (
        spec.settings.gold.rate
        == DEFAULT_GOLD_RATE
        == CampaignSettingsForm().fields["gold_rate"].initial
    )
    assert spec.settings.gold.threshold == DEFAULT_THRESHOLD
    assert CampaignSpec.from_values({"name": "e", "extends": "  "}).extends is None


@pytest.mark.django_db
def test_form_job_and_command_build_the_same_settings(settings, tmp_path):
    settings.TASKS = {
        "default": {
            "BACKEND": "django_tasks.backends.immediate.ImmediateBackend",
            "QUEUES": ["default", "gpu"],
        }
    }
    settings.FIREPOOL_JOB_OUTPUT_DIR = tmp_path
    dataset, _, _ = query_dataset("same-settings", n=6)
    random_run(dataset, "r", seed=1)
    form = CampaignSettingsForm({**VALUES, "show_roles": "no"})
    assert form.is_valid(), form.errors
    spec = form.spec()
    assert spec == CampaignSpec.from_values(VALUES)
    assert spec.settings == CampaignSettings(
        judging=JudgingSettings("metric-first", budget=25),
        gold=GoldSettings(rate=0.1, qualification=True, training_pairs=8, threshold=0.75),
        show_roles=False,
    )

    from django.test import TestCase

    from jobs import runner

    with TestCase.captureOnCommitCallbacks(execute=True):
        job = runner.submit(
            "pool",
            {**{k: str(v) for k, v in VALUES.items()}, "dataset": dataset.name, "runs": "r"},
        )
    job.refresh_from_db()
    assert job.status == Job.Status.SUCCEEDED, job.error
    by_job = Campaign.objects.get(name="same")

    by_job.delete()
    args = ["--dataset", dataset.name, "--runs", "r", "--no-roles", "--format", "json"]
    for key in ("name", "depth", "seed", "judging_order", "budget", "gold_rate"):
        args += [f"--{key.replace('_', '-')}", str(VALUES[key])]
    args += ["--qualification", "8", "--qualification-threshold", "0.75"]
    call_command("create_campaign", *args, stdout=io.StringIO())
    by_command = Campaign.objects.get(name="same")
    assert by_job.settings == by_command.settings == spec.settings
