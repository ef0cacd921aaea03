"""One text rule for every free text shown to others, and a readable answer to a request
over the size limit.

The rule (config.text_rule) refuses what the name rule refuses (bidirectional overrides,
invisible format characters, controls, separators); a multi-line text may also hold line
breaks and tabs. Every door that takes such text is tried: token names, pause reasons,
escalation reasons, adjudication notes, gold explanations and guidelines (the promote form
and gold files), campaign guidelines.
"""

import json
import uuid

import pytest
from django.test import Client

from annotation.campaigns.forms import AdjudicationForm, PromoteForm
from annotation.campaigns.spec import GUIDELINES_MAX, CampaignSpec, spec_errors
from annotation.gold.file import read_gold
from annotation.judging import escalations
from annotation.judging.errors import AssignmentError
from annotation.people import service as people_service
from annotation.people.forms import PauseForm
from config import api_tokens
from config.models import ApiToken
from config.text_rule import InvalidText, check_text, text_problem
from retrieval.datasets.names import name_problem
from retrieval.formats.records import FormatError
from tests.factories import make_campaign

RLO = "\u202e"  # RIGHT-TO-LEFT OVERRIDE: "txt.exe" shows as "exe.txt"


@pytest.mark.parametrize(
    "char", [RLO, "\u2066", "\u200b", "\u2028", "\u2029", "\x00", "\x1b", "\ue000"]
)
def test_lines_texts_and_names_refuse_the_same_characters(char):
    text = f"ok{char}txt"
    assert "U+" in text_problem(text, 100)
    assert "U+" in text_problem(text, 100, lines=True)
    assert "U+" in name_problem(text)


def test_a_text_may_run_over_lines_a_line_may_not():
    text = "First rule.\r\n\tSecond rule.\nThird."
    assert text_problem(text, 100, lines=True) is None
    assert "control character (U+000D) at character 12" in text_problem(text, 100)
    assert check_text("fine", "note", 10) == "fine"
    with pytest.raises(InvalidText, match=r"the note is 11 characters long, over the limit of 10"):
        check_text("x" * 11, "note", 10)
    assert text_problem("emoji \U0001f600 and accents é ü", 100) is None


def test_forms_show_the_rule_on_the_field():
    pause = PauseForm({"reason": f"too fast{RLO}"})
    assert not pause.is_valid() and "U+202E" in pause.errors["reason"][0]
    note = AdjudicationForm({"pair": 1, "decision": "relevant", "note": f"a\n{RLO}b"})
    assert not note.is_valid() and "U+202E" in note.errors["note"][0]
    assert AdjudicationForm({"pair": 1, "decision": "relevant", "note": "a\nb"}).is_valid()
    promote = PromoteForm({"pair": 1, "explanation": "why", "guideline": f"rule{RLO}"})
    assert not promote.is_valid() and "U+202E" in promote.errors["guideline"][0]


def test_campaign_guidelines_may_hold_lines_but_no_override():
    spec = CampaignSpec.from_values({"name": "c", "guidelines": "One.\nTwo.\n"})
    assert "guidelines" not in spec_errors(spec)
    spec = CampaignSpec.from_values({"name": "c", "guidelines": f"One.\n{RLO}Two."})
    assert "(U+202E) at character 6" in spec_errors(spec)["guidelines"]
    spec = CampaignSpec.from_values({"name": "c", "guidelines": "x" * (GUIDELINES_MAX + 1)})
    assert f"over the limit of {GUIDELINES_MAX:,}" in spec_errors(spec)["guidelines"]


def test_services_refuse_what_forms_would(people):
    campaign = make_campaign(n_queries=2, depth=2, seed=31)
    with pytest.raises(people_service.PeopleError, match="pause reason contains .*U\\+202E"):
        people_service.pause(campaign, people["annotator"], people["admin"], f"a{RLO}b")
    assert not people_service.standings(campaign)  # nothing paused
    with pytest.raises(api_tokens.TokenError, match="token name contains .*U\\+202E"):
        api_tokens.create(people["researcher"], f"laptop{RLO}")
    with pytest.raises(AssignmentError, match="reason contains .*U\\+202E"):
        escalations.escalate(people["annotator"], 1, f"odd{RLO}", uuid.uuid4())


def test_the_token_page_shows_the_rule(people):
    client = Client()
    client.force_login(people["researcher"])
    response = client.post("/account/tokens/", {"name": f"nightly{RLO}script"})
    assert response.status_code in (200, 400)
    assert b"U+202E" in response.content
    assert not ApiToken.objects.filter(user=people["researcher"]).exists()


def test_a_gold_file_names_the_line_and_field(tmp_path):
    path = tmp_path / "gold.csv"
    path.write_text(
        "caption_key,video_key,label,explanation,guideline\n"
        "c0,v0,relevant,fine,\n"
        f"c1,v1,relevant,looks fine{RLO},\n",
        encoding="utf-8",
    )
    with pytest.raises(FormatError) as refused:
        list(read_gold(path))
    assert "line 3" in str(refused.value) and "explanation" in str(refused.value)
    assert "U+202E" in str(refused.value)


@pytest.mark.parametrize("debug", [False, True], ids=["deployment", "make-run"])
def test_a_body_over_the_limit_is_a_readable_413(people, settings, debug):
    """Under ``make run`` (DEBUG) too: Django answered with its technical page there."""
    settings.DEBUG = debug
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1024 * 1024
    campaign = make_campaign(n_queries=2, depth=2, seed=32)
    admin = Client()
    admin.force_login(people["admin"])
    big = "x" * (2 * 1024 * 1024)
    page = admin.post(f"/campaigns/{campaign.pk}/edit/", {"name": "c", "guidelines": big})
    assert page.status_code == 413
    text = page.content.decode()
    assert "over the limit of 1,048,576 bytes (1 MiB)" in text and "Traceback" not in text
    annotator = Client()
    annotator.force_login(people["annotator"])
    api = annotator.post(
        f"/api/campaigns/{campaign.pk}/escalate/",
        json.dumps({"pair": "x", "reason": big, "uuid": str(uuid.uuid4())}),
        content_type="application/json",
    )
    assert api.status_code == 413
    assert api.json()["code"] == "too_large" and "1,048,576" in api.json()["detail"]
