"""Semantic roles on the judging page: spans stored at pooling, served with each task."""

import io

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from annotation.campaigns.settings import CampaignSettings
from config import roles
from retrieval.datasets.roles import role_graphs, role_spans
from retrieval.encoders.text import load_spacy
from retrieval.models import Caption
from tests.factories import make_campaign


def test_spans_of_the_slides_example():
    graph = role_graphs(["cut the roll with a sharp knife"], nlp=load_spacy())[0]
    assert role_spans(graph) == [(0, 3, "V"), (4, 12, "ARG1"), (13, 31, "ARGM-MNR")]


def test_coordinated_verbs_share_their_subject_once():
    text = "a man opens the door and walks in"
    spans = role_spans(role_graphs([text], nlp=load_spacy())[0])
    assert [(text[s:e], r) for s, e, r in spans] == [
        ("a man", "ARG0"), ("opens", "V"), ("the door", "ARG1"), ("walks", "V"), ("in", "ARGM-DIR"),
    ]  # fmt: skip
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:], strict=False))


@pytest.mark.django_db
@pytest.mark.parametrize("show", [True, False])
def test_tasks_carry_role_spans_when_the_campaign_shows_them(django_user_model, show):
    campaign = make_campaign()
    campaign.set_settings(CampaignSettings(show_roles=show))
    Caption.objects.filter(dataset=campaign.dataset).update(role_spans=[[0, 7, "ARG0"]])
    user = django_user_model.objects.create_user("ann", password="pw-annotator-1")
    user.groups.add(roles.ensure_groups()[roles.ANNOTATOR])
    client = APIClient()
    client.force_login(user)
    task = client.post(f"/api/campaigns/{campaign.pk}/next/").json()["current"]
    assert task["roles"] == ([[0, 7, "ARG0"]] if show else [])


@pytest.mark.django_db
def test_pooling_fills_spans_and_the_command_fills_the_rest():
    campaign = make_campaign()
    pooled = Caption.objects.filter(pk__in=campaign.pairs.values("caption_id"))
    assert all(spans for spans in pooled.values_list("role_spans", flat=True))
    Caption.objects.filter(dataset=campaign.dataset).update(role_spans=None)
    out = io.StringIO()
    call_command("roles", fill_dataset=campaign.dataset.name, verbosity=0, stdout=out)
    assert "Role spans stored for" in out.getvalue()
    text, spans = pooled.values_list("text", "role_spans").first()
    assert spans == [list(span) for span in role_spans(role_graphs([text], nlp=load_spacy())[0])]
