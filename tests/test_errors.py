"""User errors: raised deep in a service, shown as a message by each boundary.

A command ends in ``CommandError``, a page in a 400 page, the API in ``{"code", "detail"}``
with the error's status; the job boundary is tested in ``tests/jobs/test_jobs.py``, and a
lookup's :class:`config.errors.NotFound` at every boundary here.
"""

import re

import pytest
from django.core.management import CommandError, call_command
from django.urls import include, path
from rest_framework.test import APIClient

from annotation.campaign_read.agreement import AgreementError
from annotation.campaign_read.exports import ExportError
from annotation.campaign_read.jobs import ExportForm
from annotation.campaigns.lookup import get_campaign
from annotation.campaigns.service import CampaignError
from annotation.judging.errors import AssignmentError
from annotation.models import Campaign
from annotation.simulation.live import SimulationError
from config import roles
from config.errors import NotFound, UserError
from jobs import tasks
from jobs.models import Job
from jobs.runner import JobError
from retrieval.datasets.demo.service import DemoDatasetExists, DemoError
from retrieval.datasets.importing import ImportOptionError
from retrieval.encoders.service import EncodingError
from retrieval.formats.records import DuplicateKeyError, FormatError
from retrieval.label_sets.service import LabelSetError
from retrieval.models import RetrievalModel
from retrieval.proxies.service import ProxyError
from retrieval.proxies.synsets import ClassFileError
from retrieval.scoring.rescoring_service import RescoreError
from retrieval.search.artifacts import MissingEmbeddings
from retrieval.search.registration import RegistrationError
from retrieval.search.service import PredictError, predict
from tests.factories import make_campaign

SERVICE_ERRORS = (
    AgreementError,
    AssignmentError,
    CampaignError,
    ClassFileError,
    DemoDatasetExists,
    DemoError,
    DuplicateKeyError,
    EncodingError,
    ExportError,
    FormatError,
    ImportOptionError,
    JobError,
    LabelSetError,
    MissingEmbeddings,
    NotFound,
    PredictError,
    ProxyError,
    RegistrationError,
    RescoreError,
    SimulationError,
)


def predict_page(request, model_id: int):
    """A page that lets the service's error through, as views now do."""
    predict(RetrievalModel.objects.get(pk=model_id))
    raise AssertionError("predict should have refused a model registered from a run file")


def broken_page(request):
    raise ValueError("operands could not be broadcast together")


urlpatterns = [
    path("test-errors/predict/<int:model_id>/", predict_page),
    path("test-errors/broken/", broken_page),
    path("", include("config.urls")),  # the error page's layout links to the site's pages
]


def test_every_service_error_is_a_user_error_and_none_is_a_value_error():
    for error in SERVICE_ERRORS:
        assert issubclass(error, UserError) and not issubclass(error, ValueError), error


@pytest.mark.django_db
def test_a_command_shows_a_service_error_as_its_message():
    campaign = make_campaign()
    with pytest.raises(CommandError, match="'m' was registered from a run file") as raised:
        call_command("predict", dataset=campaign.dataset.name, model="m")
    assert isinstance(raised.value.__cause__, PredictError)


@pytest.mark.django_db
@pytest.mark.urls("tests.test_errors")
def test_a_page_shows_a_service_error_as_a_400_page_and_a_bug_is_not_hidden(client):
    campaign = make_campaign()
    model = RetrievalModel.objects.get(dataset=campaign.dataset, name="m")
    response = client.get(f"/test-errors/predict/{model.pk}/")
    assert response.status_code == 400
    assert "error.html" in [template.name for template in response.templates]
    assert "model &#x27;m&#x27; was registered from a run file" in response.content.decode()
    assert "Traceback" not in response.content.decode()
    with pytest.raises(ValueError, match="broadcast"):  # a bug stays a server error
        client.get("/test-errors/broken/")


@pytest.mark.django_db
def test_the_api_answers_a_service_error_with_its_code_and_status():
    campaign = make_campaign()
    annotator = roles.ensure_groups()[roles.ANNOTATOR].user_set.create(username="ann")
    client = APIClient()
    client.force_authenticate(annotator)
    nothing = client.post(f"/api/campaigns/{campaign.pk}/undo/")
    assert nothing.status_code == 404
    assert nothing.json() == {"code": "not_found", "detail": "there is nothing to undo"}
    Campaign.objects.filter(pk=campaign.pk).update(status=Campaign.Status.PAUSED)
    paused = client.post(f"/api/campaigns/{campaign.pk}/undo/")
    assert paused.status_code == 409
    assert paused.json() == {
        "code": "inactive",
        "detail": "this campaign is paused: it takes no judgements now",
    }


@pytest.mark.django_db
def test_a_lookup_of_an_unknown_name_is_a_clean_message_at_every_boundary():
    """The lookups raise a UserError (NotFound), not a CommandError: a command (through the
    job kind's form), a job form and a job each show its message as their own boundary does."""
    make_campaign()
    message = "no campaign named 'gone' (known: "
    # The command checks its options with the export job kind's form, naming the option.
    with pytest.raises(CommandError, match=f"^--campaign: {re.escape(message)}"):
        call_command("export_labels", campaign="gone", format="jsonl", output="-")
    with pytest.raises(NotFound, match=f"^{re.escape(message)}"):
        get_campaign("gone")
    form = ExportForm({"campaign": "gone", "format": "jsonl"})
    assert not form.is_valid() and form.errors["campaign"][0].startswith(message)
    job = Job.objects.create(kind="export", arguments={"campaign": "gone", "format": "jsonl"})
    tasks.execute(job.pk)
    job.refresh_from_db()
    assert job.status == Job.Status.FAILED and job.error.startswith(message)
    assert job.error.endswith(")") and "Internal error" not in job.error


@pytest.mark.django_db
def test_the_api_answers_drfs_own_errors_in_the_same_body():
    """Validation, a missing object, a refused role and an unknown task: one body each,
    built by the exception handler, never by a view."""
    campaign = make_campaign()
    annotator = roles.ensure_groups()[roles.ANNOTATOR].user_set.create(username="ann")
    client = APIClient()
    client.force_authenticate(annotator)
    base = f"/api/campaigns/{campaign.pk}/"
    invalid = client.post(base + "submit/", {"pair": "nope", "label": "maybe"}, format="json")
    assert invalid.status_code == 400
    assert invalid.json()["code"] == "invalid"
    assert set(invalid.json()["detail"]) == {"pair", "label", "uuid"}
    unknown = client.post(
        base + "submit/",
        {"pair": "0" * 32, "label": "relevant", "uuid": "00000000-0000-4000-8000-000000000000"},
        format="json",
    )
    assert unknown.status_code == 404
    assert unknown.json() == {
        "code": "not_found",
        "detail": "no such task of yours in this campaign",
    }
    missing = client.post("/api/campaigns/999999/next/")
    assert missing.status_code == 404
    assert missing.json() == {"code": "not_found", "detail": "No such campaign."}
    refused = client.get(base + "annotator-scores/")
    assert refused.status_code == 403
    assert refused.json() == {
        "code": "permission_denied",
        "detail": "Only researchers and admins can see campaign reports.",
    }


def test_a_refusal_puts_a_user_error_on_the_form_and_lets_every_other_error_through():
    from django import forms

    from config.error_handling import Refusal

    class Named(UserError):
        status = 409

        def __init__(self, field: str, message: str):
            super().__init__(message)
            self.field = field

    class Form(forms.Form):
        name = forms.CharField()

    form = Form({"name": "x"})
    with (refusal := Refusal(form)) as kept:
        raise Named("name", "taken")
    assert kept is refusal and refusal.message == "taken" and refusal.status == 409
    assert form.errors == {"name": ["taken"]}  # on the field the error names

    form = Form({"name": "x"})
    with (refusal := Refusal(form)):
        raise Named("caption", "no such field here")
    assert form.errors == {"__all__": ["no such field here"]}  # else the whole form's

    assert Refusal().status == 400 and Refusal().message == ""  # never reached: a 400
    with pytest.raises(ValueError), Refusal():  # a bug is never taken for a refusal
        raise ValueError("bug")
    with pytest.raises(NotFound), Refusal(only=Named):  # nor another kind than ``only``
        raise NotFound("gone")
