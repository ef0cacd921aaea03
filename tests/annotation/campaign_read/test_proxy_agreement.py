"""Semantic proxies against human labels: AUC, best threshold, alpha; the campaign page."""

import krippendorff
import numpy as np
import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from scipy.stats import mannwhitneyu

from annotation.campaign_read.proxy_agreement import (
    agreement_by_threshold,
    proxy_agreement,
    roc_auc,
)
from annotation.campaign_read.reporting import campaign_proxy_report
from annotation.simulation.live import simulate
from config.roles import RESEARCHER, ensure_groups
from retrieval.datasets.demo.service import create_demo_dataset
from retrieval.proxies.service import ProxyOptions, proxy_relevance
from tests.factories import random_run_campaign


def test_auc_by_hand_and_against_mann_whitney():
    # 0.35 beats 0.1, loses to 0.4; 0.8 beats both: 3 of 4 comparisons.
    assert roc_auc(np.array([0.1, 0.4, 0.35, 0.8]), np.array([0, 0, 1, 1])) == 0.75
    rng = np.random.default_rng(2)
    scores = rng.integers(0, 6, 300) / 5  # many ties
    labels = rng.random(300) < 0.3 + 0.2 * scores
    u = mannwhitneyu(scores[labels], scores[~labels]).statistic
    assert roc_auc(scores, labels) == pytest.approx(u / (labels.sum() * (~labels).sum()))
    assert roc_auc(scores, np.ones(300, bool)) is None


def test_alpha_by_threshold_matches_the_krippendorff_package():
    rng = np.random.default_rng(5)
    scores = np.round(rng.random(200), 2)
    labels = rng.random(200) < scores
    thresholds, agree, alphas = agreement_by_threshold(scores, labels)
    for i in (0, 10, 50, len(thresholds) // 2, len(thresholds) - 2):
        predicted = scores >= thresholds[i]
        assert agree[i] == pytest.approx((predicted == labels).mean())
        expected = krippendorff.alpha(
            reliability_data=np.vstack([predicted, labels]).astype(float),
            level_of_measurement="nominal",
        )
        assert alphas[i] == pytest.approx(expected)
    # Above the maximum nothing is predicted relevant.
    assert agree[-1] == pytest.approx(1 - labels.mean())


def test_perfect_proxy_and_missing_pairs():
    scores = np.array([0.1, 0.2, np.nan, 0.7, 0.9])
    labels = np.array([0, 0, 1, 1, 1], bool)
    result = proxy_agreement(scores, labels)
    assert result.pairs == 4 and result.auc == 1.0
    assert result.agreement == 1.0 and result.alpha == pytest.approx(1.0)
    assert 0.2 < result.threshold <= 0.7
    assert "1 pairs outside" in result.note
    assert proxy_agreement(np.array([]), np.array([], bool)).auc is None


@pytest.fixture
def judged_campaign(db):
    dataset = create_demo_dataset(name="pa", n_videos=24, seed=3, workers=1)
    campaign = random_run_campaign(dataset, "pa-c", depth=4, seed=1)
    simulate(campaign, annotators=1, error_rate=0.0, seed=0)
    return campaign


def test_campaign_report_scores_every_judged_pair(judged_campaign):
    report = campaign_proxy_report(judged_campaign, cache_only=True)
    assert report.missing == ["bow", "pos", "syn", "met"] and report.proxies == ()
    assert report.missing_labels == ["BoW", "PoS", "SYN", "METEOR"]
    report = campaign_proxy_report(judged_campaign)
    assert report.missing == []
    bow = next(row for row in report.proxies if row.proxy == "bow")
    assert bow.label == "BoW" and bow.error == ""
    assert bow.result.pairs == report.pairs > 0
    # Independent check of the AUC from the cached matrix and the pairs' final labels.
    from annotation.campaign_read.labels import campaign_judged

    judged = campaign_judged(judged_campaign)
    keep = judged.relevance >= 0
    relevance = proxy_relevance(judged_campaign.dataset, ProxyOptions("bow"))
    scores = relevance.pair_scores(judged.caption_ids[keep], judged.video_ids[keep])
    assert not np.isnan(scores).any()
    assert bow.result.auc == pytest.approx(roc_auc(scores, judged.relevance[keep] == 1))
    assert len(report.curves["bow"]) == len(report.curve_thresholds) == 21


def test_agreement_page_shows_proxies(judged_campaign, client):
    campaign_proxy_report(judged_campaign)  # computes and caches the matrices
    ensure_groups()
    user = get_user_model().objects.create_user("res", password="pw-research-1")
    user.groups.add(Group.objects.get(name=RESEARCHER))
    client.force_login(user)
    page = client.get(f"/campaigns/{judged_campaign.pk}/agreement/").content.decode()
    assert page.count('id="proxy-agreement"') == 1
    assert "<title>Agreement · pa-c" in page
    for label in ("BoW", "PoS", "SYN", "METEOR"):
        assert f"<td>{label}</td>" in page
    assert "Krippendorff&#x27;s alpha with the humans" in page


def test_pairs_a_proxy_labelled_are_not_graded_as_human_labels(judged_campaign):
    from annotation.models import Pair

    before = campaign_proxy_report(judged_campaign).pairs
    pair = Pair.objects.filter(campaign=judged_campaign).exclude(status="pending").first()
    Pair.objects.filter(pk=pair.pk).update(auto_label="bow>=0.90")
    after = campaign_proxy_report(judged_campaign, cache_only=True)
    assert after.pairs == before - 1
    assert all(row.result.pairs == before - 1 for row in after.proxies)
