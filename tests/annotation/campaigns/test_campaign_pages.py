"""An annotator's campaigns with their own progress, and a campaign's own page."""

import random
import uuid
from datetime import timedelta

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework.test import APIClient

from annotation.campaign_read.exports import EXPORT_FORMATS
from annotation.campaign_read.overview import LabelCounts
from annotation.campaign_read.reporting import campaign_report
from annotation.campaign_read.resolution import resolve_campaign
from annotation.judging import queue, submit
from annotation.models import Campaign, GoldJudgement, Judgement
from annotation.ordering import priorities
from annotation.people.progress import annotator_progress, judging_campaigns
from config import roles
from tests.factories import add_gold, make_campaign

PASSWORD = "pw-campaign-page-1"


def member(username: str, role: str):
    user = get_user_model().objects.create_user(username, password=PASSWORD)
    user.groups.add(roles.ensure_groups()[role])
    return user


def judge(campaign: Campaign, annotator, limit: int | None = None) -> list[int]:
    """Let ``annotator`` label pairs relevant until nothing is left (or ``limit``): no ties."""
    judged = []
    while limit is None or len(judged) < limit:
        current = queue.assign(campaign, annotator).current
        if current is None:
            break
        submit.submit(annotator, current.pair.pk, "relevant", uuid.uuid4(), seconds=1.0)
        judged.append(current.pair.pk)
    return judged


@pytest.fixture
def two_annotators(db):
    """Two campaigns and two annotators, by hand.

    ``open``: 9 pairs, each wanting two labels (18 labels). ann1 labels all 9, two of them
    yesterday; ann2 labels 3 today. So 18 - 9 - 3 = 6 labels are left, all on pairs ann1
    has judged: nothing is left for ann1, 6 are left for ann2.
    ``done``: 4 pairs wanting one label each, all labelled by ann2: finished for everyone.
    """
    ann1, ann2 = member("ann1", roles.ANNOTATOR), member("ann2", roles.ANNOTATOR)
    open_ = make_campaign(n_queries=3, depth=3, rate=1.0)
    done = make_campaign(n_queries=2, depth=2, rate=0.0)
    first = judge(open_, ann1)
    assert len(first) == 9
    yesterday = timezone.now() - timedelta(days=1)
    Judgement.objects.filter(annotator=ann1, pair_id__in=first[:2]).update(created_at=yesterday)
    assert len(judge(open_, ann2, limit=3)) == 3
    assert len(judge(done, ann2)) == 4
    return open_, done, ann1, ann2


def _by_name(progress):
    return {item.name: item for item in progress}


def test_home_progress_against_a_hand_built_case(two_annotators):
    open_, done, ann1, ann2 = two_annotators
    campaigns = list(judging_campaigns())
    mine = _by_name(annotator_progress(campaigns, ann1))
    theirs = _by_name(annotator_progress(campaigns, ann2))

    a = mine[open_.name]
    assert (a.judged_today, a.judged_total, a.labels_left, a.pairs) == (7, 9, 6, 9)
    assert a.left_for_me == 0 and a.nothing_for_me and not a.finished
    b = theirs[open_.name]
    assert (b.judged_today, b.judged_total, b.labels_left, b.left_for_me) == (3, 3, 6, 6)
    assert not b.nothing_for_me and not b.finished
    for item, judged in ((mine[done.name], (0, 0)), (theirs[done.name], (4, 4))):
        assert (item.judged_today, item.judged_total) == judged
        assert item.labels_left == 0 and item.finished and not item.nothing_for_me

    # The judging page's own progress, campaign by campaign, says the same.
    for annotator, progress in ((ann1, mine), (ann2, theirs)):
        for campaign in campaigns:
            one = queue.progress(campaign, annotator)
            item = progress[campaign.name]
            assert (one.judged_today, one.judged_total, one.labels_left, one.pairs) == (
                item.judged_today,
                item.judged_total,
                item.labels_left,
                item.pairs,
            )
            assert item.nothing_for_me == (
                not item.finished and not queue.has_work_for(campaign, annotator)
            )


def _api_progress(campaign, user) -> dict:
    client = APIClient()
    client.force_authenticate(user)
    return client.get(f"/api/campaigns/{campaign.pk}/progress/").json()


def _home_card(client, campaign) -> str:
    page = client.get("/judge/").content.decode()
    card = page[page.index(f'data-campaign="{campaign.pk}"') :]
    return card[: card.index("</li>")]


def test_gold_in_the_queue_counts_the_same_on_both_pages(db):
    """Gold rate 0.5, 12 answers: the annotator's gold answers count as judgements and as
    labels done on the judging page (so a gold pair changes nothing they see); the home
    list, the judging API and the judging page's progress say the same figures."""
    random.seed(7)
    ann = member("ann", roles.ANNOTATOR)
    campaign = make_campaign(n_queries=4, depth=5, rate=1.0)  # 20 pairs, 40 labels
    add_gold(campaign, 10, rate=0.5)
    judge(campaign, ann, limit=12)
    gold = GoldJudgement.objects.filter(annotator=ann, purpose=GoldJudgement.Purpose.QUEUE)
    answered_gold = gold.count()
    assert 0 < answered_gold < 12
    needed = queue.campaign_totals(campaign)[1]
    assert needed == 40 - (12 - answered_gold)

    one = queue.progress(campaign, ann)
    (item,) = annotator_progress(
        [Campaign.objects.select_related("dataset").get(pk=campaign.pk)], ann
    )
    api = _api_progress(campaign, ann)
    figures = (12, 12, needed - answered_gold, 20)
    assert (one.judged_today, one.judged_total, one.labels_left, one.pairs) == figures
    assert (item.judged_today, item.judged_total, item.labels_left, item.pairs) == figures
    assert (api["judged_today"], api["judged_total"], api["labels_left"], api["pairs"]) == figures
    # Whether the campaign is finished, or has work for them, reads the campaign's own figure.
    # Each pair ann labelled needs its second label from someone else.
    assert item.labels_needed == needed and item.left_for_me == needed - (12 - answered_gold)
    assert not item.finished and item.state.key == "judging"
    client = Client()
    client.force_login(ann)
    card = _home_card(client, campaign)
    assert f'<dd class="labels-left">{needed - answered_gold}</dd>' in card
    assert '<dd class="judged-total">12</dd>' in card


NEEDED_NOW = "the judging order decides what is needed now"


def test_an_adaptive_order_says_needed_now_and_both_pages_agree(db):
    """metric-first parks pairs as labels come in (a label may take several off what is
    needed): the service, the home list, the judging API's progress and the judging page
    all say "needed now", with the same figures after every answer."""
    ann = member("ann", roles.ANNOTATOR)
    campaign = make_campaign(n_queries=3, depth=5, judging_order="metric-first")
    assert campaign.settings.judging.adaptive
    client = Client()
    client.force_login(ann)
    api = APIClient()
    api.force_authenticate(ann)
    page = client.get(f"/judge/{campaign.pk}/").content.decode()
    assert 'data-needed-now="1"' in page
    lefts = []
    while True:
        one = queue.progress(campaign, ann)
        fresh = Campaign.objects.select_related("dataset").get(pk=campaign.pk)
        (item,) = annotator_progress([fresh], ann)
        shown = api.get(f"/api/campaigns/{campaign.pk}/progress/").json()
        assert item.needed_now
        figures = (one.judged_today, one.judged_total, one.labels_left, one.pairs)
        assert (item.judged_today, item.judged_total, item.labels_left, item.pairs) == figures
        assert (
            shown["judged_today"],
            shown["judged_total"],
            shown["labels_left"],
            shown["pairs"],
        ) == figures
        assert shown["state"]["key"] == item.state.key
        card = _home_card(client, campaign)
        assert "Labels needed now in the campaign" in card and NEEDED_NOW in card
        assert f'<dd class="labels-left">{one.labels_left}</dd>' in card
        # The bar: labels given, of those and the ones needed now (the judging page's too).
        given = priorities.labels_spent(campaign)
        percent = round(100 * given / (given + one.labels_left)) if given + one.labels_left else 100
        assert item.done_percent == percent and f'aria-valuenow="{percent}"' in card
        lefts.append(one.labels_left)
        got = api.post(f"/api/campaigns/{campaign.pk}/next/").json()
        assert got["progress"]["labels_left"] == one.labels_left
        if got["current"] is None:
            break
        judge(campaign, ann, limit=1)
    # The order changed what is needed: some answer took more than its own label off.
    assert any(before - after > 1 for before, after in zip(lefts, lefts[1:], strict=False))
    assert priorities.parked_pairs(campaign).exists()
    assert lefts[-1] == 0 and item.state.key == "finished"


def test_a_fixed_order_says_left(db):
    ann = member("ann", roles.ANNOTATOR)
    campaign = make_campaign(n_queries=2, depth=2, judging_order="depth")
    assert not campaign.settings.judging.adaptive
    client = Client()
    client.force_login(ann)
    card = _home_card(client, campaign)
    assert "Labels left in the campaign" in card and NEEDED_NOW not in card
    assert 'data-needed-now="0"' in client.get(f"/judge/{campaign.pk}/").content.decode()


def test_the_judging_page_bar_says_the_home_list_words():
    """judge.js writes the bar's text itself: the same words as the home list's."""
    script = (settings.BASE_DIR / "static" / "js" / "judge.js").read_text()
    template = (settings.BASE_DIR / "templates" / "annotation" / "_progress.html").read_text()
    for words in (" given (", NEEDED_NOW):
        assert words in script and words in template
    assert "% done" not in script


def test_the_judge_list_shows_the_figures_and_the_messages(two_annotators):
    open_, done, ann1, ann2 = two_annotators
    client = Client()
    client.force_login(ann1)
    page = client.get("/judge/").content.decode()
    assert "Nothing is left for you here" in page
    assert "Finished" in page and "Nothing is left to judge here, for anyone" in page
    assert f'href="/judge/{open_.pk}/"' in page  # the name leads to the judging page
    assert f'href="/campaigns/{open_.pk}/"' not in page  # annotators have no campaign page
    client.force_login(ann2)
    page = client.get("/judge/").content.decode()
    assert "Nothing is left for you here" not in page and "Continue judging" in page
    # Work first: the campaign with labels left for ann2 before the finished one.
    assert page.index(f'href="/judge/{open_.pk}/"') < page.index(f'href="/judge/{done.pk}/"')


def test_a_label_budget_spent_finishes_the_campaign(db):
    ann = member("ann", roles.ANNOTATOR)
    campaign = make_campaign(n_queries=3, depth=3, budget=4)
    judge(campaign, ann)
    (item,) = annotator_progress(
        [Campaign.objects.select_related("dataset").get(pk=campaign.pk)], ann
    )
    assert item.labels_spent == 4 and item.labels_left == 5
    assert item.finished and item.budget_spent and not item.nothing_for_me


def _queries(callable_) -> int:
    with CaptureQueriesContext(connection) as queries:
        callable_()
    return len(queries)


def test_progress_queries_do_not_grow_with_the_campaigns(db):
    ann = member("ann", roles.ANNOTATOR)
    first = make_campaign(n_queries=2, depth=2, budget=10)
    judge(first, ann, limit=2)
    client = Client()
    client.force_login(ann)
    client.get("/judge/")  # the session's first request (its session row is saved)

    def service():
        return annotator_progress(list(judging_campaigns()), ann)

    def page():
        assert client.get("/judge/").status_code == 200

    few = (_queries(service), _queries(page))
    for _ in range(4):
        judge(make_campaign(n_queries=2, depth=2, budget=10), ann, limit=1)
    assert len(service()) == 5
    assert (_queries(service), _queries(page)) == few


@pytest.fixture
def resolved(db):
    """A campaign where two annotators label every pair (one says relevant, one irrelevant
    on the first pair: a disagreement for an admin), resolved to a label set."""
    ann1, ann2 = member("ann1", roles.ANNOTATOR), member("ann2", roles.ANNOTATOR)
    campaign = make_campaign(n_queries=2, depth=3, rate=1.0)
    campaign.max_labels = 2
    campaign.save(update_fields=["max_labels"])
    judge(campaign, ann1)
    current = queue.assign(campaign, ann2).current
    submit.submit(ann2, current.pair.pk, "irrelevant", uuid.uuid4(), seconds=1.0)
    judge(campaign, ann2)
    label_set = resolve_campaign(campaign)
    return Campaign.objects.select_related("dataset").get(pk=campaign.pk), label_set


def test_the_campaign_page_shows_each_section(resolved):
    campaign, label_set = resolved
    admin = member("boss", roles.ADMIN)
    researcher = member("res", roles.RESEARCHER)
    client = Client()
    client.force_login(admin)
    response = client.get(f"/campaigns/{campaign.pk}/")
    assert response.status_code == 200
    html = response.content.decode()
    page = response.context["page"]
    # Settings.
    assert page.settings.runs == ("m",) and page.settings.depth == 3
    assert 'id="setting-depth">top 3 of each run' in html
    assert "C@1, C@5, C@10" in html and "depth" in html
    # Progress: 6 pairs, 12 labels today, none left; one disagreement.
    assert (page.row.counts.pairs, page.row.counts.disagreement, page.row.counts.relevant) == (
        6,
        1,
        5,
    )
    assert page.counts == LabelCounts(today=12, in_all=12, still_needed=0)
    assert page.judging.labels_left == 0
    assert 'id="progress-today">12<' in html and 'id="progress-pairs">6<' in html
    # Agreement: the agreement page's report, figure for figure.
    report = campaign_report(campaign)
    assert page.agreement == report
    assert report.agreement.percent_agreement == pytest.approx(5 / 6)
    assert 'id="agreement-percent">83.3%<' in html
    assert f'href="/campaigns/{campaign.pk}/agreement/"' in html
    # Adjudication: the disagreement waits for an admin.
    assert page.waiting_for_admin == 1 and 'id="waiting-for-admin">1<' in html
    # Exports and resolution, for admins.
    for fmt in EXPORT_FORMATS:
        assert f'href="/campaigns/{campaign.pk}/export/{fmt}/"' in html
    assert f'action="/campaigns/{campaign.pk}/resolve/"' in html
    # The label set made from it, with its report and leaderboard.
    assert [s.pk for s in page.label_sets] == [label_set.pk]
    assert f"/leaderboard/?labels={label_set.name}" in html

    client.force_login(researcher)
    html = client.get(f"/campaigns/{campaign.pk}/").content.decode()
    assert 'id="agreement-percent">83.3%<' in html
    assert "/export/" not in html and "/resolve/" not in html and "/adjudicate/" not in html


def test_resolving_from_the_campaign_page_comes_back_to_it(resolved):
    campaign, _ = resolved
    client = Client()
    client.force_login(member("boss", roles.ADMIN))
    back = f"/campaigns/{campaign.pk}/"
    response = client.post(f"/campaigns/{campaign.pk}/resolve/", {"next": back})
    assert response.status_code == 302 and response["Location"] == back
    elsewhere = client.post(f"/campaigns/{campaign.pk}/resolve/", {"next": "https://evil.example/"})
    assert elsewhere["Location"] == "/campaigns/"


def test_an_unknown_campaign_is_404(db):
    client = Client()
    client.force_login(member("boss", roles.ADMIN))
    assert client.get("/campaigns/999999/").status_code == 404
    assert client.get("/campaigns/0/").status_code == 404


def test_names_lead_to_the_campaign_page(resolved):
    campaign, _ = resolved
    client = Client()
    client.force_login(member("boss", roles.ADMIN))
    link = f'href="/campaigns/{campaign.pk}/"'
    for url in (
        "/campaigns/",
        "/",
        f"/campaigns/{campaign.pk}/agreement/",
        f"/campaigns/{campaign.pk}/adjudicate/",
        f"/datasets/{campaign.dataset.name}/",
    ):
        response = client.get(url)
        assert response.status_code == 200, url
        assert link in response.content.decode(), url
