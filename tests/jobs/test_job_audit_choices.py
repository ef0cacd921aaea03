"""Issue #28 §4 audit: the pool kind starts on the New campaign page, not the raw job form;
the rescore job offers the dataset's runs as checkboxes while the CLI and JSON pass a comma
list."""

import re

from jobs import runner
from jobs.models import Job
from jobs.registry import get_kind
from tests.factories import pooled_world


def test_the_pool_kind_goes_to_the_new_campaign_page(admin):
    answer = admin.get("/jobs/?kind=pool")
    assert answer.status_code == 302 and answer["Location"] == "/campaigns/new/"
    answer = admin.get("/jobs/?kind=pool&dataset=pw")
    assert answer["Location"] == "/campaigns/new/?dataset=pw"
    assert get_kind("pool").form_url == "campaign-new"
    # other kinds keep the generic form
    assert admin.get("/jobs/?kind=export").status_code == 200


def test_researchers_are_not_sent_to_an_admins_page(db, client):
    from django.contrib.auth import get_user_model

    from config import roles

    user = get_user_model().objects.create_user("res", password="pw-long-enough-1")
    user.groups.add(roles.ensure_groups()[roles.RESEARCHER])
    client.force_login(user)
    answer = client.get("/jobs/?kind=pool")
    assert answer.status_code == 200 and 'name="gold"' not in answer.content.decode()


def test_rescore_offers_the_runs_as_checkboxes(admin):
    pooled_world("pw")
    page = admin.get("/jobs/?kind=rescore&dataset=pw&runs=beta").content.decode()
    boxes = re.findall(r'<input type="checkbox" name="runs" value="(\w+)"([^>]*)>', page)
    assert [name for name, _ in boxes] == ["alpha", "beta"]
    assert "checked" in dict(boxes)["beta"] and "checked" not in dict(boxes)["alpha"]


def test_rescore_runs_from_the_page_and_from_the_cli_are_one_comma_list(admin):
    pooled_world("pw")
    kind = get_kind("rescore")
    assert runner.check_arguments(kind, {"dataset": "pw", "runs": "alpha, beta"})["runs"] == (
        "alpha, beta"
    )
    form = kind.form(data={"dataset": "pw", "runs": ["alpha", "beta"]})
    assert form.is_valid(), form.errors
    assert form.cleaned_data["runs"] == "alpha,beta"
    answer = admin.post("/jobs/start/rescore/", {"dataset": "pw", "runs": ["alpha", "nope"]})
    assert answer.status_code == 400 and "nope" in answer.content.decode()
    assert not Job.objects.exists()
    answer = admin.post("/jobs/start/rescore/", {"dataset": "pw", "runs": ["alpha"]})
    assert answer.status_code == 302
    assert Job.objects.get().arguments["runs"] == "alpha"
