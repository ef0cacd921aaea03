"""Where the names are known, job forms and the add-model page offer them as select boxes
(datasets, models, runs, label sets, campaigns), validated as the typed names were."""

import re

import pytest

from jobs.models import Job
from tests.factories import make_campaign, pooled_world


def select(page: str, name: str) -> str:
    found = re.search(rf'<select name="{name}"[^>]*>(.*?)</select>', page, re.S)
    assert found, f"no select box {name!r}"
    return found.group(1)


def test_job_forms_offer_datasets_models_runs_and_label_sets(admin):
    pooled_world("pw")
    page = admin.get("/jobs/?kind=score_run&dataset=pw").content.decode()
    assert '<option value="pw" selected>pw</option>' in select(page, "dataset")
    runs = select(page, "run")
    assert '<optgroup label="pw">' in runs and '<option value="alpha">alpha</option>' in runs
    labels = select(page, "labels")
    assert "the original positives only</option>" in labels
    assert '<option value="pooled">pooled</option>' in labels
    models = select(admin.get("/jobs/?kind=predict").content.decode(), "model")
    assert '<optgroup label="pw">' in models


def test_export_offers_the_campaigns(admin):
    campaign = make_campaign()
    page = admin.get("/jobs/?kind=export").content.decode()
    assert f'<option value="{campaign.name}">' in select(page, "campaign")


@pytest.mark.parametrize(
    ("kind", "data", "words"),
    [
        ("score_run", {"dataset": "nope", "run": "alpha"}, "nope"),
        ("score_run", {"dataset": "pw", "run": "nope"}, "nope"),
        ("score_run", {"dataset": "pw", "run": "alpha", "labels": "nope"}, "nope"),
        ("export", {"campaign": "nope", "format": "jsonl"}, "nope"),
        ("predict", {"dataset": "pw", "model": "x" * 500}, "at most 100 characters"),
    ],
)
def test_a_name_not_offered_is_refused_as_before(admin, kind, data, words):
    pooled_world("pw")
    answer = admin.post(f"/jobs/start/{kind}/", data)
    assert answer.status_code == 400 and words in answer.content.decode()
    assert not Job.objects.exists()


def test_add_model_offers_the_datasets_label_sets(admin):
    pooled_world("pw")
    page = admin.get("/datasets/pw/add-model/").content.decode()
    labels = select(page, "labels")
    assert '<option value="" selected>the dataset&#x27;s default label set</option>' in labels
    assert '<option value="pooled">pooled</option>' in labels
    answer = admin.post("/datasets/pw/add-model/", {"name": "m", "source": "run", "labels": "nope"})
    assert answer.status_code == 400
