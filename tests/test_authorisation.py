"""Who may open what: every URL of the site against the four roles, and annotators kept apart.

The matrix enumerates the project's URL resolver, so a URL added without an expected entry
here fails :func:`test_every_url_pattern_has_expectations` until someone decides who may
open it. Each role's test walks the whole table in one database (building the world once)
and reports every mismatch together.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field, replace

import pytest
from django.apps import apps as django_apps
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.db import transaction
from django.test import Client, RequestFactory
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from django.utils import timezone

from annotation.campaign_read.exports import EXPORT_FORMATS
from annotation.campaign_read.resolution import resolve_campaign
from annotation.campaigns.service import CampaignSpec, create_campaign
from annotation.campaigns.settings import GoldSettings
from annotation.judging import escalations, queue, submit, task_ids
from annotation.models import (
    AnnotatorStanding,
    Campaign,
    GoldJudgement,
    GoldPair,
    Judgement,
    Pair,
    QualificationAttempt,
)
from config import roles
from retrieval.datasets.demo.service import create_demo_dataset
from retrieval.models import Caption, Dataset, Video
from tests.factories import random_run

ANON, ANNOTATOR, RESEARCHER, ADMIN = "anonymous", "annotator", "researcher", "admin"
SUPERUSER = "superuser"
ROLES = (ANON, ANNOTATOR, RESEARCHER, ADMIN, SUPERUSER)
"""The admin role is tested twice: as a member of the admin group, and as a superuser (the
demo's admin account), who must get exactly what the admin role gets."""
PASSWORD = "pw-authz-123456"
LOGIN = 302  # redirect to the login page (checked to point there)


@dataclass
class World:
    """The objects the URL table is filled in with."""

    campaign: Campaign
    closed: Campaign
    users: dict[str, object]
    other_annotator: object
    campaign_video: str
    other_video: str
    features: str
    research_job: int
    admin_job: int
    score_job: int

    def fill(self, url: str) -> str:
        return url.format(
            c=self.campaign.pk,
            closed=self.closed.pk,
            ds=self.campaign.dataset.name,
            other_ds=self.closed.dataset.name,
            video=self.campaign_video,
            other_video=self.other_video,
            features=self.features,
            research_job=self.research_job,
            admin_job=self.admin_job,
            score_job=self.score_job,
            ann=self.users[ANNOTATOR].pk,
        )


def _user(username: str, role: str | None, *, staff: bool = False):
    user = get_user_model().objects.create_user(username, password=PASSWORD, is_staff=staff)
    if role:
        user.groups.add(roles.ensure_groups()[role])
    return user


def _judge_all(campaign: Campaign, annotator, *, flip: bool, limit: int | None = None) -> int:
    """Let ``annotator`` judge until nothing is left (or ``limit`` labels), labels set by ``flip``."""
    done = 0
    while limit is None or done < limit:
        current = queue.assign(campaign, annotator).current
        if current is None:
            break
        relevant = (current.pair.video_id % 2 == 0) != flip
        label = "relevant" if relevant else "irrelevant"
        submit.submit(annotator, current.pair.pk, label, uuid.uuid4(), seconds=2.0)
        done += 1
    return done


def _jobs(output_dir) -> tuple[int, int]:
    """A finished re-scoring job (a researcher's kind) and a finished export with its file."""
    from jobs.models import Job

    research = Job.objects.create(kind="rescore", status=Job.Status.SUCCEEDED)
    output_dir.mkdir(parents=True, exist_ok=True)
    (output_dir / "labels.csv").write_text("caption,video,label\n")
    export = Job.objects.create(
        kind="export",
        status=Job.Status.SUCCEEDED,
        output=str(output_dir / "labels.csv"),
        result={"filename": "labels.csv"},
    )
    return research.pk, export.pk


@pytest.fixture
def world(db, _isolated_media, settings, tmp_path) -> World:
    """A small demo world: a judged campaign, a closed one on another dataset, four roles.

    Two annotators label the active campaign (every pair wants two labels); the first judges
    everything, the second half of it, so the second still has work and disagreements exist.
    """
    users = {
        ANNOTATOR: _user("ann1", roles.ANNOTATOR),
        RESEARCHER: _user("res", roles.RESEARCHER, staff=True),
        ADMIN: _user("boss", roles.ADMIN, staff=True),
        SUPERUSER: get_user_model().objects.create_superuser("root", password=PASSWORD),
    }
    other = _user("ann2", roles.ANNOTATOR)
    dataset = create_demo_dataset(name="authz", n_videos=12, seed=3, workers=1)
    runs = [random_run(dataset, "alpha", 0), random_run(dataset, "beta", 1)]
    campaign = create_campaign(
        dataset,
        runs,
        CampaignSpec(name="authz-campaign", depth=3, second_label_rate=1.0, max_labels=2),
    )
    total = _judge_all(campaign, users[ANNOTATOR], flip=False)
    _judge_all(campaign, other, flip=True, limit=total // 2)
    resolve_campaign(campaign)
    # The second annotator's unused leases run out, as if they had walked away.
    queue.release_expired(campaign, campaign.created_at.replace(year=9999))
    elsewhere = create_demo_dataset(name="elsewhere", n_videos=6, seed=4, workers=1)
    closed = create_campaign(
        elsewhere,
        [random_run(elsewhere, "gamma", 2)],
        CampaignSpec(name="closed-campaign", depth=2, second_label_rate=0.0),
    )
    closed.status = Campaign.Status.CLOSED
    closed.save()
    campaign_video = Pair.objects.filter(campaign=campaign).first().video
    other_video = Pair.objects.filter(campaign=closed).first().video
    features = f"features/{campaign_video.key}.npy"
    (_isolated_media / "features").mkdir()
    (_isolated_media / features).write_bytes(b"\x93NUMPY fake features")
    campaign_video.features.name = features
    campaign_video.save(update_fields=["features"])
    settings.FIREPOOL_JOB_OUTPUT_DIR = tmp_path / "job-output"
    research_job, admin_job = _jobs(settings.FIREPOOL_JOB_OUTPUT_DIR)
    from jobs.models import Job

    score_job = Job.objects.create(kind="score_run", created_by=users[RESEARCHER]).pk
    return World(
        score_job=score_job,
        research_job=research_job,
        admin_job=admin_job,
        campaign=campaign,
        closed=closed,
        users=users,
        other_annotator=other,
        campaign_video=campaign_video.media.name,
        other_video=other_video.media.name,
        features=features,
    )


@dataclass(frozen=True)
class Case:
    """One request and the status each role should get (a tuple: any of those)."""

    pattern: str
    url: str
    expect: dict[str, int | tuple[int, ...]]
    method: str = "get"
    data: dict = field(default_factory=dict)


def page(pattern: str, url: str, annotator, researcher, admin, anonymous=LOGIN, **kw) -> Case:
    expect = {ANON: anonymous, ANNOTATOR: annotator, RESEARCHER: researcher, ADMIN: admin}
    return Case(pattern, url, expect, **kw)


# Who may judge: annotators and admins. Who may read campaigns and reports: researchers and
# admins. Who may change things (adjudicate, export, resolve, the admin site's forms): admins.
# Anonymous visitors are sent to the login page, or get 403 from the API.
STAFF_ONLY = {"annotator": 403, "researcher": 200, "admin": 200}
ADMIN_ONLY = {"annotator": 403, "researcher": 403, "admin": 200}
JUDGES = {"annotator": 200, "researcher": 403, "admin": 200}
API_READ = {"annotator": 200, "researcher": 200, "admin": 200}
API_ANON = 403

EXPORTS = [
    page(
        "campaigns/<int:campaign_id>/export/<str:fmt>/",
        f"/campaigns/{{c}}/export/{fmt}/",
        **ADMIN_ONLY,
    )
    for fmt in EXPORT_FORMATS
]

CASES: list[Case] = [
    page("", "/", annotator=302, researcher=200, admin=200),
    page("login/", "/login/", 200, 200, 200, anonymous=200),
    page("logout/", "/logout/", 405, 405, 405, anonymous=405),
    page("logout/", "/logout/", 302, 302, 302, anonymous=302, method="post"),
    page("favicon.ico", "/favicon.ico", 301, 301, 301, anonymous=301),
    # Media: annotators only get the videos of campaigns they can judge.
    page("media/<path:path>", "/media/{video}", 200, 200, 200),
    page("media/<path:path>", "/media/{other_video}", 404, 200, 200),
    page("media/<path:path>", "/media/{features}", 404, 200, 200),
    page("media/<path:path>", "/media/demo/authz/missing.webm", 404, 404, 404),
    page("media/<path:path>", "/media/{video}", 405, 405, 405, anonymous=405, method="post"),
    # Judging pages.
    page("judge/", "/judge/", **JUDGES),
    page("judge/<int:campaign_id>/", "/judge/{c}/", **JUDGES),
    page("judge/<int:campaign_id>/", "/judge/999999/", annotator=404, researcher=403, admin=404),
    # Campaign pages.
    page("campaigns/", "/campaigns/", **STAFF_ONLY),
    page("campaigns/<int:campaign_id>/", "/campaigns/{c}/", **STAFF_ONLY),
    page("campaigns/<int:campaign_id>/", "/campaigns/{closed}/", **STAFF_ONLY),
    page(
        "campaigns/<int:campaign_id>/",
        "/campaigns/999999/",
        annotator=403,
        researcher=404,
        admin=404,
    ),
    page(
        "campaigns/<int:campaign_id>/",
        "/campaigns/{c}/",
        405,
        405,
        405,
        anonymous=405,
        method="post",
    ),
    # A campaign's life cycle: admins only; POSTs past the role check are refused as bad
    # input or aimed at the closed campaign, so the table's world stays as it is.
    page("campaigns/new/", "/campaigns/new/", **ADMIN_ONLY),
    page("campaigns/new/", "/campaigns/new/", 403, 403, 400, method="post"),
    page("campaigns/<int:campaign_id>/edit/", "/campaigns/{c}/edit/", **ADMIN_ONLY),
    page("campaigns/<int:campaign_id>/edit/", "/campaigns/999999/edit/", 403, 403, 404),
    page("campaigns/<int:campaign_id>/edit/", "/campaigns/{c}/edit/", 403, 403, 400, method="post"),
    page("campaigns/<int:campaign_id>/status/", "/campaigns/{c}/status/", 403, 403, 400),
    page(
        "campaigns/<int:campaign_id>/status/",
        "/campaigns/{c}/status/?action=close",
        **ADMIN_ONLY,
    ),
    page("campaigns/<int:campaign_id>/status/", "/campaigns/999999/status/", 403, 403, 404),
    page(
        "campaigns/<int:campaign_id>/status/",
        "/campaigns/{closed}/status/",
        403,
        403,
        400,  # a closed campaign stays closed
        method="post",
        data={"action": "resume"},
    ),
    page(
        "campaigns/<int:campaign_id>/gold/import/",
        "/campaigns/{c}/gold/import/",
        405,
        405,
        405,
        anonymous=405,
    ),
    page(
        "campaigns/<int:campaign_id>/gold/import/",
        "/campaigns/{c}/gold/import/",
        403,
        403,
        400,  # no file
        method="post",
    ),
    page(
        "campaigns/<int:campaign_id>/gold/promote-decided/",
        "/campaigns/{c}/gold/promote-decided/",
        **ADMIN_ONLY,
    ),
    page(
        "campaigns/<int:campaign_id>/gold/promote-decided/",
        "/campaigns/999999/gold/promote-decided/",
        403,
        403,
        404,
    ),
    page(
        "campaigns/<int:campaign_id>/gold/promote-decided/",
        "/campaigns/{closed}/gold/promote-decided/",
        403,
        403,
        400,  # no confirmed count: nothing promoted
        method="post",
    ),
    page("campaigns/<int:campaign_id>/agreement/", "/campaigns/{c}/agreement/", **STAFF_ONLY),
    page(
        "campaigns/<int:campaign_id>/agreement/",
        "/campaigns/999999/agreement/",
        annotator=403,
        researcher=404,
        admin=404,
    ),
    # A campaign's annotators: researchers read, admins act (POST only, the discount after
    # a GET confirmation); odd ids are 404 after the role check.
    page("campaigns/<int:campaign_id>/annotators/", "/campaigns/{c}/annotators/", **STAFF_ONLY),
    page(
        "campaigns/<int:campaign_id>/annotators/",
        "/campaigns/999999/annotators/",
        annotator=403,
        researcher=404,
        admin=404,
    ),
    page(
        "campaigns/<int:campaign_id>/annotators/",
        "/campaigns/{c}/annotators/",
        405,
        405,
        405,
        anonymous=405,
        method="post",
    ),
    page(
        "campaigns/<int:campaign_id>/annotators/invite/",
        "/campaigns/{c}/annotators/invite/",
        405,
        405,
        405,
        anonymous=405,
    ),
    page(
        "campaigns/<int:campaign_id>/annotators/invite/",
        "/campaigns/{c}/annotators/invite/",
        annotator=403,
        researcher=403,
        admin=302,  # past the role check: nobody named, a message and back
        method="post",
    ),
    page(
        "campaigns/<int:campaign_id>/annotators/add/",
        "/campaigns/{c}/annotators/add/",
        405,
        405,
        405,
        anonymous=405,
    ),
    page(
        "campaigns/<int:campaign_id>/annotators/add/",
        "/campaigns/{c}/annotators/add/",
        annotator=403,
        researcher=403,
        admin=400,  # past the role check: no username, the form's error, nothing made
        method="post",
    ),
    page(
        "campaigns/<int:campaign_id>/annotators/add/",
        "/campaigns/999999/annotators/add/",
        annotator=403,
        researcher=403,
        admin=404,
        method="post",
    ),
    page(
        "campaigns/<int:campaign_id>/annotators/made/",
        "/campaigns/{c}/annotators/made/",
        **ADMIN_ONLY,  # nothing made in this session: the note that a password shows once
    ),
    page(
        "campaigns/<int:campaign_id>/annotators/made/",
        "/campaigns/999999/annotators/made/",
        annotator=403,
        researcher=403,
        admin=404,
    ),
    page(
        "campaigns/<int:campaign_id>/annotators/made/",
        "/campaigns/{c}/annotators/made/",
        405,
        405,
        405,
        anonymous=405,
        method="post",
    ),
    page(
        "campaigns/<int:campaign_id>/annotators/<int:annotator_id>/discount/",
        "/campaigns/{c}/annotators/{ann}/discount/",
        **ADMIN_ONLY,
    ),
    page(
        "campaigns/<int:campaign_id>/annotators/<int:annotator_id>/discount/",
        "/campaigns/{c}/annotators/999999/discount/",
        annotator=403,
        researcher=403,
        admin=404,
    ),
    page(
        "campaigns/<int:campaign_id>/annotators/<int:annotator_id>/discount/",
        "/campaigns/{c}/annotators/{ann}/discount/",
        annotator=403,
        researcher=403,
        admin=400,  # past the role check: no confirmed count, nothing discounted
        method="post",
    ),
    page(
        "campaigns/<int:campaign_id>/annotators/<int:annotator_id>/<str:action>/",
        "/campaigns/{c}/annotators/{ann}/reinstate/",
        405,
        405,
        405,
        anonymous=405,
    ),
    page(
        "campaigns/<int:campaign_id>/annotators/<int:annotator_id>/<str:action>/",
        "/campaigns/{c}/annotators/{ann}/reinstate/",
        annotator=403,
        researcher=403,
        admin=302,  # past the role check: not paused, a message and back
        method="post",
    ),
    page(
        "campaigns/<int:campaign_id>/annotators/<int:annotator_id>/<str:action>/",
        "/campaigns/{c}/annotators/{ann}/explode/",
        annotator=403,
        researcher=403,
        admin=404,
        method="post",
    ),
    page("campaigns/<int:campaign_id>/adjudicate/", "/campaigns/{c}/adjudicate/", **ADMIN_ONLY),
    page(
        "campaigns/<int:campaign_id>/adjudicate/",
        "/campaigns/{c}/adjudicate/",
        annotator=403,
        researcher=403,
        admin=400,  # past the role check: pair 0 and "maybe" fail the form
        method="post",
        data={"pair": "0", "decision": "maybe"},
    ),
    # Promoting decided pairs to gold changes data: POST only, admins only.
    page(
        "campaigns/<int:campaign_id>/gold/promote/",
        "/campaigns/{c}/gold/promote/",
        405,
        405,
        405,
        anonymous=405,
    ),
    page(
        "campaigns/<int:campaign_id>/gold/promote/",
        "/campaigns/{c}/gold/promote/",
        annotator=403,
        researcher=403,
        admin=400,  # past the role check: neither a pair nor every decided pair named
        method="post",
        data={"explanation": "x"},
    ),
    page(
        "campaigns/<int:campaign_id>/gold/promote/",
        "/campaigns/{c}/gold/promote/",
        annotator=403,
        researcher=403,
        admin=400,  # every decided pair needs the confirmed count: nothing promoted
        method="post",
        data={"all_decided": "on"},
    ),
    *EXPORTS,
    page(
        "campaigns/<int:campaign_id>/export/<str:fmt>/",
        "/campaigns/{c}/export/xlsx/",
        annotator=403,
        researcher=403,
        admin=404,
    ),
    # A GET shows what resolving would make or replace (the confirmation), writing nothing.
    page("campaigns/<int:campaign_id>/resolve/", "/campaigns/{c}/resolve/", **ADMIN_ONLY),
    page(
        "campaigns/<int:campaign_id>/resolve/",
        "/campaigns/{c}/resolve/",
        annotator=403,
        researcher=403,
        admin=302,
        method="post",
    ),
    page(
        "campaigns/<int:campaign_id>/reopen/",
        "/campaigns/{c}/reopen/",
        405,
        405,
        405,
        anonymous=405,
    ),
    page(
        "campaigns/<int:campaign_id>/reopen/",
        "/campaigns/{c}/reopen/",
        annotator=403,
        researcher=403,
        admin=302,
        method="post",
    ),
    page(
        "campaigns/<int:campaign_id>/sample/",
        "/campaigns/{c}/sample/",
        405,
        405,
        405,
        anonymous=405,
    ),
    page(
        "campaigns/<int:campaign_id>/sample/",
        "/campaigns/{c}/sample/",
        annotator=403,
        researcher=403,
        admin=302,
        method="post",
        data={"pairs": "5"},
    ),
    page(
        "campaigns/missing/<name:dataset_name>/",
        "/campaigns/missing/{ds}/?run=beta&labels=authz-campaign",
        **ADMIN_ONLY,
    ),
    page(
        "campaigns/missing/<name:dataset_name>/",
        "/campaigns/missing/{ds}/?run=nope&labels=authz-campaign",
        annotator=403,
        researcher=403,
        admin=404,
    ),
    page(
        "campaigns/missing/<name:dataset_name>/",
        "/campaigns/missing/{ds}/",
        annotator=403,
        researcher=403,
        admin=400,
        method="post",
        data={"run": "beta", "labels": "authz-campaign", "name": ""},
    ),
    # Datasets, label sets and reports.
    page("datasets/", "/datasets/", **STAFF_ONLY),
    page("datasets/<name:dataset_name>/", "/datasets/{ds}/", **STAFF_ONLY),
    page(
        "datasets/<name:dataset_name>/",
        "/datasets/nope/",
        annotator=403,
        researcher=404,
        admin=404,
    ),
    page("datasets/<name:dataset_name>/leaderboard/", "/datasets/{ds}/leaderboard/", **STAFF_ONLY),
    page(
        "datasets/<name:dataset_name>/leaderboard/",
        "/datasets/{ds}/leaderboard/?labels=authz-campaign&sort=-original:AP",
        **STAFF_ONLY,
    ),
    page(
        "datasets/<name:dataset_name>/leaderboard/",
        "/datasets/{ds}/leaderboard/?labels=nope",
        annotator=403,
        researcher=404,
        admin=404,
    ),
    page(
        "datasets/<name:dataset_name>/leaderboard/",
        "/datasets/{ds}/leaderboard/?sort=nope",
        annotator=403,
        researcher=400,
        admin=400,
    ),
    page(
        "datasets/<name:dataset_name>/leaderboard/",
        "/datasets/nope/leaderboard/",
        annotator=403,
        researcher=404,
        admin=404,
    ),
    *[
        page(
            "datasets/<name:dataset_name>/leaderboard/export/<str:fmt>/",
            f"/datasets/{{ds}}/leaderboard/export/{fmt}/",
            **STAFF_ONLY,
        )
        for fmt in ("csv", "json", "latex")
    ],
    page(
        "datasets/<name:dataset_name>/leaderboard/export/<str:fmt>/",
        "/datasets/{ds}/leaderboard/export/xlsx/",
        annotator=403,
        researcher=404,
        admin=404,
    ),
    # Uploading a dataset is an admin's job; adding a model a researcher's too. Empty forms
    # come back as 400 and write nothing.
    page("upload/dataset/", "/upload/dataset/", **ADMIN_ONLY),
    page(
        "upload/dataset/",
        "/upload/dataset/",
        annotator=403,
        researcher=403,
        admin=400,
        method="post",
    ),
    page("datasets/<name:dataset_name>/add-model/", "/datasets/{ds}/add-model/", **STAFF_ONLY),
    page(
        "datasets/<name:dataset_name>/add-model/",
        "/datasets/nope/add-model/",
        annotator=403,
        researcher=404,
        admin=404,
    ),
    page(
        "datasets/<name:dataset_name>/add-model/",
        "/datasets/{ds}/add-model/",
        annotator=403,
        researcher=400,
        admin=400,
        method="post",
    ),
    page(
        "datasets/<name:dataset_name>/models/<name:model_name>/",
        "/datasets/{ds}/models/alpha/",
        **STAFF_ONLY,
    ),
    page(
        "datasets/<name:dataset_name>/models/<name:model_name>/",
        "/datasets/{ds}/models/nope/",
        annotator=403,
        researcher=404,
        admin=404,
    ),
    page("label-sets/", "/label-sets/", **STAFF_ONLY),
    # Choosing a dataset's default label set: POST only, admins only; a name the dataset
    # has no set of is refused (400), so the world stays as it is.
    page(
        "datasets/<name:dataset_name>/default-label-set/",
        "/datasets/{ds}/default-label-set/",
        405,
        405,
        405,
        anonymous=405,
    ),
    page(
        "datasets/<name:dataset_name>/default-label-set/",
        "/datasets/{ds}/default-label-set/",
        annotator=403,
        researcher=403,
        admin=400,
        method="post",
        data={"label_set": "nope"},
    ),
    page(
        "datasets/<name:dataset_name>/default-label-set/",
        "/datasets/nope/default-label-set/",
        annotator=403,
        researcher=403,
        admin=404,
        method="post",
        data={"label_set": "nope"},
    ),
    page("reports/", "/reports/", **STAFF_ONLY),
    # API tokens: those the token-accepting API lets in; an empty name comes back as 400, and
    # revoking a token that is not the user's finds nothing (a message, back to the page).
    page("account/tokens/", "/account/tokens/", **STAFF_ONLY),
    page("account/tokens/", "/account/tokens/", 403, 400, 400, method="post"),
    page(
        "account/tokens/<int:token_id>/revoke/",
        "/account/tokens/1/revoke/",
        405,
        405,
        405,
        anonymous=405,
    ),
    page(
        "account/tokens/<int:token_id>/revoke/",
        "/account/tokens/999999/revoke/",
        annotator=403,
        researcher=404,
        admin=404,
        method="post",
    ),
    page("reports/<name:dataset_name>/", "/reports/{ds}/", **STAFF_ONLY),
    page(
        "reports/<name:dataset_name>/", "/reports/nope/", annotator=403, researcher=404, admin=404
    ),
    page("reports/<name:dataset_name>/data/", "/reports/{ds}/data/", **STAFF_ONLY),
    page(
        "reports/<name:dataset_name>/judging-orders/",
        "/reports/{ds}/judging-orders/",
        **STAFF_ONLY,
    ),
    # The API: everything needs a login; judging needs the annotator (or admin) role.
    page("api/", "/api/", **API_READ, anonymous=API_ANON),
    page("api/<drf_format_suffix:format>", "/api/.json", **API_READ, anonymous=API_ANON),
    page("api/^campaigns/$", "/api/campaigns/", **API_READ, anonymous=API_ANON),
    # Creating a campaign (the pool job): admins only; an empty body is a 400 for them.
    page(
        "api/^campaigns/$",
        "/api/campaigns/",
        403,
        403,
        400,
        anonymous=API_ANON,
        method="post",
    ),
    page(
        r"api/^campaigns\.(?P<format>[a-z0-9]+)/?$",
        "/api/campaigns.json",
        **API_READ,
        anonymous=API_ANON,
    ),
    page("api/^campaigns/(?P<pk>[0-9]+)/$", "/api/campaigns/{c}/", **API_READ, anonymous=API_ANON),
    page(
        "api/^campaigns/(?P<pk>[0-9]+)/$",
        "/api/campaigns/{closed}/",
        annotator=404,
        researcher=200,
        admin=200,
        anonymous=API_ANON,
    ),
    page(
        r"api/^campaigns/(?P<pk>[0-9]+)\.(?P<format>[a-z0-9]+)/?$",
        "/api/campaigns/{c}.json",
        **API_READ,
        anonymous=API_ANON,
    ),
    # Taking leases is a state change: next/ answers POST only, and GET changes nothing.
    page(
        "api/^campaigns/(?P<pk>[0-9]+)/next/$",
        "/api/campaigns/{c}/next/",
        405,
        403,
        405,
        anonymous=API_ANON,
    ),
    page(
        r"api/^campaigns/(?P<pk>[0-9]+)/next\.(?P<format>[a-z0-9]+)/?$",
        "/api/campaigns/{c}/next.json",
        405,
        403,
        405,
        anonymous=API_ANON,
    ),
    page(
        "api/^campaigns/(?P<pk>[0-9]+)/next/$",
        "/api/campaigns/{c}/next/",
        **JUDGES,
        anonymous=API_ANON,
        method="post",
    ),
    page(
        "api/^campaigns/(?P<pk>[0-9]+)/progress/$",
        "/api/campaigns/{c}/progress/",
        **JUDGES,
        anonymous=API_ANON,
    ),
    page(
        r"api/^campaigns/(?P<pk>[0-9]+)/progress\.(?P<format>[a-z0-9]+)/?$",
        "/api/campaigns/{c}/progress.json",
        **JUDGES,
        anonymous=API_ANON,
    ),
    # Whether the caller may judge now (the judging page's poll): judges; a GET, POST 405.
    page(
        "api/^campaigns/(?P<pk>[0-9]+)/standing/$",
        "/api/campaigns/{c}/standing/",
        **JUDGES,
        anonymous=API_ANON,
    ),
    *[
        page(
            "api/^campaigns/(?P<pk>[0-9]+)/standing/$",
            f"/api/campaigns/{missing}/standing/",  # no row; past any id column's range
            annotator=404,
            researcher=403,
            admin=404,
            anonymous=API_ANON,
        )
        for missing in ("999999", "9" * 23)
    ],
    page(
        "api/^campaigns/(?P<pk>[0-9]+)/standing/$",
        "/api/campaigns/{c}/standing/",
        405,
        403,
        405,
        anonymous=API_ANON,
        method="post",
    ),
    page(
        r"api/^campaigns/(?P<pk>[0-9]+)/standing\.(?P<format>[a-z0-9]+)/?$",
        "/api/campaigns/{c}/standing.json",
        **JUDGES,
        anonymous=API_ANON,
    ),
    # Annotator scores are a campaign report: researchers and admins.
    page(
        "api/^campaigns/(?P<pk>[0-9]+)/annotator-scores/$",
        "/api/campaigns/{c}/annotator-scores/",
        **STAFF_ONLY,
        anonymous=API_ANON,
    ),
    page(
        "api/^campaigns/(?P<pk>[0-9]+)/annotator-scores/$",
        "/api/campaigns/999999/annotator-scores/",
        annotator=403,
        researcher=404,
        admin=404,
        anonymous=API_ANON,
    ),
    page(
        "api/^campaigns/(?P<pk>[0-9]+)/annotator-scores/$",
        "/api/campaigns/{c}/annotator-scores/",
        annotator=403,
        researcher=405,
        admin=405,
        anonymous=API_ANON,
        method="post",
    ),
    page(
        r"api/^campaigns/(?P<pk>[0-9]+)/annotator-scores\.(?P<format>[a-z0-9]+)/?$",
        "/api/campaigns/{c}/annotator-scores.json",
        **STAFF_ONLY,
        anonymous=API_ANON,
    ),
    # The active stages are a campaign report: researchers and admins, read only.
    page(
        "api/^campaigns/(?P<pk>[0-9]+)/active-stages/$",
        "/api/campaigns/{c}/active-stages/",
        **STAFF_ONLY,
        anonymous=API_ANON,
    ),
    page(
        "api/^campaigns/(?P<pk>[0-9]+)/active-stages/$",
        "/api/campaigns/999999/active-stages/",
        annotator=403,
        researcher=404,
        admin=404,
        anonymous=API_ANON,
    ),
    page(
        "api/^campaigns/(?P<pk>[0-9]+)/active-stages/$",
        "/api/campaigns/{c}/active-stages/",
        annotator=403,
        researcher=405,
        admin=405,
        anonymous=API_ANON,
        method="post",
    ),
    page(
        r"api/^campaigns/(?P<pk>[0-9]+)/active-stages\.(?P<format>[a-z0-9]+)/?$",
        "/api/campaigns/{c}/active-stages.json",
        **STAFF_ONLY,
        anonymous=API_ANON,
    ),
    # An empty body is refused as invalid (400) only once the role is allowed in.
    page(
        "api/^campaigns/(?P<pk>[0-9]+)/submit/$",
        "/api/campaigns/{c}/submit/",
        400,
        403,
        400,
        anonymous=API_ANON,
        method="post",
    ),
    page(
        r"api/^campaigns/(?P<pk>[0-9]+)/submit\.(?P<format>[a-z0-9]+)/?$",
        "/api/campaigns/{c}/submit.json",
        400,
        403,
        400,
        anonymous=API_ANON,
        method="post",
    ),
    page(
        "api/^campaigns/(?P<pk>[0-9]+)/submit/$",
        "/api/campaigns/{c}/submit/",
        405,
        403,
        405,
        anonymous=API_ANON,
    ),
    page(
        "api/^campaigns/(?P<pk>[0-9]+)/escalate/$",
        "/api/campaigns/{c}/escalate/",
        400,
        403,
        400,
        anonymous=API_ANON,
        method="post",
    ),
    page(
        r"api/^campaigns/(?P<pk>[0-9]+)/escalate\.(?P<format>[a-z0-9]+)/?$",
        "/api/campaigns/{c}/escalate.json",
        400,
        403,
        400,
        anonymous=API_ANON,
        method="post",
    ),
    # Undo takes back the caller's own latest label (200, or 409 once too old); the admin has
    # none of their own in this campaign (404) and never undoes an annotator's.
    page(
        "api/^campaigns/(?P<pk>[0-9]+)/undo/$",
        "/api/campaigns/{c}/undo/",
        (200, 409),
        403,
        404,
        anonymous=API_ANON,
        method="post",
    ),
    page(
        r"api/^campaigns/(?P<pk>[0-9]+)/undo\.(?P<format>[a-z0-9]+)/?$",
        "/api/campaigns/{c}/undo.json",
        (200, 409),
        403,
        404,
        anonymous=API_ANON,
        method="post",
    ),
    # The scoring API: researchers and admins upload runs; a job's scores are for the
    # uploader (here the researcher) and admins. An empty upload is refused as invalid.
    page(
        "api/datasets/<name:dataset_name>/runs/",
        "/api/datasets/{ds}/runs/",
        annotator=403,
        researcher=400,
        admin=400,
        anonymous=API_ANON,
        method="post",
    ),
    page(
        "api/datasets/<name:dataset_name>/runs/",
        "/api/datasets/{ds}/runs/",
        annotator=403,
        researcher=405,
        admin=405,
        anonymous=API_ANON,
    ),
    page(
        "api/datasets/<name:dataset_name>/runs/",
        "/api/datasets/nope/runs/",
        annotator=403,
        researcher=404,
        admin=404,
        anonymous=API_ANON,
        method="post",
    ),
    page("api/scores/<int:job_id>/", "/api/scores/{score_job}/", **STAFF_ONLY, anonymous=API_ANON),
    page(
        "api/scores/<int:job_id>/",
        "/api/scores/{research_job}/",
        annotator=403,
        researcher=404,
        admin=404,
        anonymous=API_ANON,
    ),
    # A pool job's state for admins' scripts; another kind's job is no campaign's (404).
    page(
        "api/campaign-jobs/<int:job_id>/",
        "/api/campaign-jobs/{research_job}/",
        annotator=403,
        researcher=403,
        admin=404,
        anonymous=API_ANON,
    ),
    page("api/schema/", "/api/schema/", 200, 200, 200, anonymous=API_ANON),
    page("api/docs/", "/api/docs/", 200, 200, 200, anonymous=API_ANON),
    # The admin site as a group: researchers read, admins change, annotators never enter.
    page("admin/", "/admin/", annotator=302, researcher=200, admin=200),
    page("admin/", "/admin/annotation/judgement/", annotator=302, researcher=200, admin=200),
    page("admin/", "/admin/annotation/campaign/add/", annotator=302, researcher=403, admin=200),
    page("admin/", "/admin/retrieval/video/", annotator=302, researcher=200, admin=200),
    # Gold labels and the answers on them are for admins only.
    page("admin/", "/admin/annotation/goldpair/", annotator=302, researcher=403, admin=200),
    page("admin/", "/admin/annotation/goldjudgement/", annotator=302, researcher=403, admin=200),
    page(
        "admin/",
        "/admin/annotation/qualificationattempt/",
        annotator=302,
        researcher=403,
        admin=200,
    ),
    page("admin/", "/admin/auth/user/", annotator=302, researcher=403, admin=200),
    page("admin/login/", "/admin/login/", 200, 200, 200, anonymous=200),
    # The lead's jobs app (jobs/urls.py): annotators never; researchers start research jobs,
    # admins every kind. Invalid (empty) forms come back as 400 and queue nothing.
    page("jobs/", "/jobs/", **STAFF_ONLY),
    page("jobs/start/<str:kind_name>/", "/jobs/start/rescore/", 405, 405, 405, anonymous=405),
    page(
        "jobs/start/<str:kind_name>/",
        "/jobs/start/rescore/",
        annotator=403,
        researcher=400,
        admin=400,
        method="post",
    ),
    page(
        "jobs/start/<str:kind_name>/",
        "/jobs/start/export/",
        annotator=403,
        researcher=403,
        admin=400,
        method="post",
    ),
    page("jobs/<int:job_id>/", "/jobs/{research_job}/", **STAFF_ONLY),
    page("jobs/<int:job_id>/status/", "/jobs/{research_job}/status/", **STAFF_ONLY),
    # Only a failed job can be retried: 409 here means the role got past the check.
    page(
        "jobs/<int:job_id>/retry/",
        "/jobs/{research_job}/retry/",
        annotator=403,
        researcher=409,
        admin=409,
        method="post",
    ),
    page(
        "jobs/<int:job_id>/retry/",
        "/jobs/{admin_job}/retry/",
        annotator=403,
        researcher=403,
        admin=409,
        method="post",
    ),
    page("jobs/<int:job_id>/output/", "/jobs/{admin_job}/output/", **ADMIN_ONLY),
    page(
        "jobs/<int:job_id>/output/",
        "/jobs/{research_job}/output/",
        annotator=403,
        researcher=404,
        admin=404,
    ),
]
"""The expected status of every URL pattern, per role (``pattern`` names the route)."""


def _patterns(resolvers, prefix: str = "") -> Iterator[str]:
    for entry in resolvers:
        if isinstance(entry, URLResolver):
            yield from _patterns(entry.url_patterns, prefix + str(entry.pattern))
        elif isinstance(entry, URLPattern):
            yield prefix + str(entry.pattern)


def site_patterns() -> set[str]:
    """Every route of the site; the admin site's own routes count as one group ``admin/``."""
    found = set()
    for route in _patterns(get_resolver().url_patterns):
        if route.startswith("admin/") and route != "admin/login/":
            route = "admin/"
        found.add(route)
    return found


def test_every_url_pattern_has_expectations():
    covered = {case.pattern for case in CASES}
    missing = site_patterns() - covered
    assert not missing, f"URL patterns with no expected status per role: {sorted(missing)}"
    stale = covered - site_patterns()
    assert not stale, f"expectations for URL patterns that no longer exist: {sorted(stale)}"


def _client(world: World, role: str) -> Client:
    client = Client()
    if role != ANON:
        client.force_login(world.users[role])
    return client


def _request(client: Client, case: Case, world: World):
    url = world.fill(case.url)
    if case.method == "post":
        return client.post(url, case.data)
    return client.get(url)


@pytest.mark.parametrize("role", ROLES)
def test_authorisation_matrix(world, role):
    wrong = []
    for case in CASES:
        # A fresh session per request: logging out must not change what later cases see.
        response = _request(_client(world, role), case, world)
        expected = case.expect[ADMIN if role == SUPERUSER else role]
        allowed = expected if isinstance(expected, tuple) else (expected,)
        got = response.status_code
        if got not in allowed:
            wrong.append(f"{case.method.upper()} {case.url}: expected {expected}, got {got}")
        elif (
            got == LOGIN
            and role == ANON
            and not response["Location"].startswith(("/login/", "/admin/login/"))
        ):
            wrong.append(f"{case.url}: redirected to {response['Location']}, not the login")
        body = _body(response)
        if role == ANNOTATOR and world.other_annotator.username.encode() in body:
            wrong.append(f"{case.method.upper()} {case.url}: shows the other annotator's name")
    assert not wrong, f"{role}:\n" + "\n".join(wrong)


def _body(response) -> bytes:
    if hasattr(response, "streaming_content"):
        return b"".join(response.streaming_content)  # also closes served files
    return response.content


def _api(world: World, user) -> Client:
    client = Client()
    client.force_login(user)
    return client


TASK_FIELDS = {
    "pair",
    "caption",
    "caption_key",
    "video_url",
    "video_fragment",
    "poster_url",
    "segment",
    "expires_at",
    "roles",
}


def test_annotator_api_answers_only_about_their_own_work(world):
    """Next, progress and submit carry the caller's tasks and counts, never others' labels."""
    other = world.other_annotator
    base = f"/api/campaigns/{world.campaign.pk}/"
    client = _api(world, other)
    got = client.post(base + "next/").json()
    assert got["current"] is not None, "the second annotator still has pairs to judge"
    for task in (got["current"], got["upcoming"]):
        assert task is None or set(task) == TASK_FIELDS
    mine = Judgement.objects.filter(annotator=other, undone_at__isnull=True).count()
    theirs = Judgement.objects.filter(annotator=world.users[ANNOTATOR]).count()
    assert 0 < mine < theirs
    progress = client.get(base + "progress/").json()
    assert progress["judged_total"] == mine
    pair = got["current"]["pair"]
    # The first annotator labelled this pair; nothing of that label comes back.
    pair_id = task_ids.decode(other.pk, pair)
    assert Judgement.objects.filter(pair_id=pair_id, annotator=world.users[ANNOTATOR]).exists()
    submitted = client.post(
        base + "submit/",
        {"pair": pair, "label": "relevant", "uuid": str(uuid.uuid4())},
        content_type="application/json",
    )
    assert submitted.status_code == 200
    text = json.dumps(submitted.json())
    assert world.users[ANNOTATOR].username not in text
    assert set(submitted.json()) == {
        "campaign",
        "current",
        "upcoming",
        "progress",
        "finished",
        "judgement",
        "created",
        "qualification",  # the caller's own standing
        "feedback",  # only after the caller's own training answers
        "paused",  # why the caller is paused, if they are
        "state",  # the caller's own state in the campaign
        "warning",  # only when the caller's own answers come too fast
    }
    assert submitted.json()["feedback"] is None
    listing = json.dumps(client.get("/api/campaigns/").json())
    assert world.users[ANNOTATOR].username not in listing
    assert world.closed.name not in listing  # a closed campaign is not theirs to see


def test_annotator_cannot_reuse_or_undo_another_annotators_judgement(world):
    first, other = world.users[ANNOTATOR], world.other_annotator
    theirs = Judgement.objects.filter(annotator=first).order_by("-created_at").first()
    base = f"/api/campaigns/{world.campaign.pk}/"
    client = _api(world, other)
    stolen = client.post(
        base + "submit/",
        {
            "pair": task_ids.encode(other.pk, theirs.pair_id),
            "label": "irrelevant",
            "uuid": str(theirs.uuid),
        },
        content_type="application/json",
    )
    assert stolen.status_code == 409 and stolen.json()["code"] == "conflict"
    assert first.username not in stolen.content.decode()
    before = set(
        Judgement.objects.filter(annotator=first, undone_at__isnull=True).values_list(
            "pk", flat=True
        )
    )
    undone = client.post(base + "undo/")
    assert undone.status_code in (200, 409)
    after = set(
        Judgement.objects.filter(annotator=first, undone_at__isnull=True).values_list(
            "pk", flat=True
        )
    )
    assert before == after
    theirs.refresh_from_db()
    assert theirs.label != "" and theirs.undone_at is None


def test_others_labels_reach_researchers_but_never_annotators(world):
    """The agreement page names both annotators for a researcher; an annotator gets a 403 in
    the site's frame (which names only them, on its log-out button) and nothing of the data."""
    agreement = f"/campaigns/{world.campaign.pk}/agreement/"
    research = _api(world, world.users[RESEARCHER]).get(agreement)
    assert research.status_code == 200
    assert world.other_annotator.username.encode() in research.content
    annotator = _api(world, world.users[ANNOTATOR])
    urls = [
        agreement,
        f"/campaigns/{world.campaign.pk}/adjudicate/",
        *(f"/campaigns/{world.campaign.pk}/export/{fmt}/" for fmt in EXPORT_FORMATS),
        "/label-sets/",
        f"/reports/{world.campaign.dataset.name}/",
        f"/reports/{world.campaign.dataset.name}/data/",
        f"/jobs/{world.admin_job}/output/",
        "/admin/annotation/judgement/",
        f"/media/{world.features}",
    ]
    captions = list(
        Caption.objects.filter(dataset=world.campaign.dataset).values_list("text", flat=True)
    )
    for url in urls:
        response = annotator.get(url)
        body = _body(response)
        assert response.status_code in (302, 403, 404), url
        assert world.other_annotator.username.encode() not in body, url
        assert not any(text.encode() in body for text in captions), url
        assert b"relevant" not in body.lower(), url


def test_state_changing_requests_need_the_csrf_token(world):
    """Session-authenticated POSTs without the token are refused, API included."""
    c = world.campaign.pk
    for role, url in (
        (ANNOTATOR, f"/api/campaigns/{c}/submit/"),
        (ANNOTATOR, f"/api/campaigns/{c}/undo/"),
        (ADMIN, f"/campaigns/{c}/resolve/"),
        (ADMIN, f"/campaigns/{c}/adjudicate/"),
        (ADMIN, f"/campaigns/{c}/annotators/invite/"),
        (ADMIN, f"/campaigns/{c}/annotators/add/"),
        (ADMIN, f"/campaigns/{c}/annotators/{world.users[ANNOTATOR].pk}/pause/"),
        (ADMIN, f"/campaigns/{c}/annotators/{world.users[ANNOTATOR].pk}/discount/"),
        (RESEARCHER, "/jobs/start/rescore/"),
        (ADMIN, "/upload/dataset/"),
        (RESEARCHER, "/datasets/authz/add-model/"),
        (ANNOTATOR, "/logout/"),
    ):
        client = Client(enforce_csrf_checks=True)
        client.force_login(world.users[role])
        response = client.post(url, {})
        assert response.status_code == 403, url
        assert b"CSRF" in response.content, url


# -- the admin site's actions and forms ----------------------------------------------------

ADMIN_ACTIONS: dict[tuple[str, str], tuple[str, ...]] = {
    # Adjudication, as on the adjudication page: manage_campaigns.
    ("annotation.escalation", "return_to_queue"): (ADMIN,),
    ("annotation.escalation", "adjudicate_relevant"): (ADMIN,),
    ("annotation.escalation", "adjudicate_irrelevant"): (ADMIN,),
    # Who judges a campaign: manage_campaigns.
    ("annotation.qualificationattempt", "admit"): (ADMIN,),
    ("annotation.annotatorstanding", "reinstate"): (ADMIN,),
    ("annotation.annotatorstanding", "discount"): (ADMIN,),
    # A dataset's default label set: the label set's change permission (admins).
    ("retrieval.labelset", "make_default"): (ADMIN,),
    # Deleting anything: the model's delete permission, which only admins hold.
    **{
        (model, "delete_selected"): (ADMIN,)
        for model in (
            "annotation.campaign",
            "annotation.pair",
            "annotation.judgement",
            "annotation.escalation",
            "annotation.goldpair",
            "annotation.goldjudgement",
            "annotation.qualificationattempt",
            "annotation.annotatorstanding",
            "retrieval.dataset",
            "retrieval.video",
            "retrieval.caption",
            "retrieval.labelset",
            "jobs.job",
        )
    },
}
"""Every action of the admin site on firepool's models, and the roles that may run it."""

ADMIN_TARGETS = {
    "annotation.escalation": {"resolved_at__isnull": True},
    "annotation.annotatorstanding": {"paused_at__isnull": False},
    "retrieval.labelset": {"is_default": False},
    "retrieval.dataset": {"name": "authz-spare"},  # no run of it pooled (pooled runs stay)
}
"""Which row each action is run on (one it changes); the first row by default."""


def _admin_models() -> dict[str, admin.ModelAdmin]:
    return {
        model._meta.label_lower: model_admin
        for model, model_admin in admin.site._registry.items()
        if model._meta.app_label in roles.APPS
    }


def test_every_admin_action_has_expectations(world):
    request = RequestFactory().get("/admin/")
    request.user = world.users[SUPERUSER]
    found = {
        (label, name)
        for label, model_admin in _admin_models().items()
        for name in model_admin.get_actions(request)
    }
    assert found == set(ADMIN_ACTIONS)


def _database() -> dict[str, list[tuple]]:
    """Every row of firepool's own tables, to tell whether a request changed anything."""
    return {
        model._meta.label: list(model._base_manager.order_by("pk").values_list())
        for label in roles.APPS
        for model in django_apps.get_app_config(label).get_models()
    }


def _admin_world(world: World) -> None:
    """An open escalation, gold answers, a failed qualification, a paused annotator, a label
    set that is not its dataset's default and a dataset nothing uses, for the admin actions
    to work on."""
    campaign, other = world.campaign, world.other_annotator
    current = queue.assign(campaign, other).current
    escalations.escalate(other, current.pair.pk, "video does not play", uuid.uuid4())
    gold = GoldSettings(rate=0.0, qualification=True)
    campaign.set_settings(replace(campaign.settings, gold=gold))
    pooled = set(campaign.pairs.values_list("caption_id", "video_id"))
    caption, video = next(
        (caption, video)
        for caption in Caption.objects.filter(dataset=campaign.dataset)
        for video in Video.objects.filter(dataset=campaign.dataset)
        if (caption.pk, video.pk) not in pooled
    )
    gold = GoldPair.objects.create(
        campaign=campaign,
        caption=caption,
        video=video,
        label="relevant",
        explanation="the caption's every element is there",
        source=GoldPair.Source.IMPORTED,
    )
    attempt = QualificationAttempt.objects.create(
        campaign=campaign, annotator=other, finished_at=timezone.now(), total=1, passed=False
    )
    GoldJudgement.objects.create(
        gold_pair=gold,
        annotator=other,
        label="irrelevant",
        purpose=GoldJudgement.Purpose.QUALIFICATION,
        attempt=attempt,
    )
    AnnotatorStanding.objects.create(
        campaign=campaign, annotator=other, paused_at=timezone.now(), reason="gold accuracy"
    )
    resolve_campaign(campaign, name="authz-second")  # not the default: the first one is
    Dataset.objects.create(name="authz-spare")


def _action_names(response) -> set[str]:
    """The actions the changelist offers (none when the page is refused)."""
    form = response.context.get("action_form") if response.status_code == 200 else None
    return set() if form is None else {value for value, _ in form.fields["action"].choices}


def test_admin_actions_per_role(world):
    """Each role runs every admin action; one it may not run is not listed, and running it
    anyway changes nothing. Each request runs in a savepoint rolled back afterwards, so every
    role meets the same rows."""
    _admin_world(world)
    models = _admin_models()
    wrong = []
    for role in ROLES:
        client = _client(world, role)
        for (label, name), allowed in ADMIN_ACTIONS.items():
            may = (ADMIN if role == SUPERUSER else role) in allowed
            model = models[label].model
            target = model._base_manager.filter(**ADMIN_TARGETS.get(label, {})).order_by("pk")
            pk = target.values_list("pk", flat=True).first()
            assert pk is not None, f"the world has no {label} for {name} to work on"
            url = reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")
            listed = name in _action_names(client.get(url))
            with transaction.atomic():
                before = _database()
                response = client.post(
                    url, {"action": name, "_selected_action": [pk], "index": 0, "post": "yes"}
                )
                changed = _database() != before
                transaction.set_rollback(True)
            what = f"{role} {label} {name}"
            if response.status_code >= 500:
                wrong.append(f"{what}: {response.status_code}")
            if listed != may:
                wrong.append(f"{what}: {'listed' if listed else 'not listed'}")
            if changed != may:
                wrong.append(f"{what}: {'changed' if changed else 'did not change'} the database")
    assert not wrong, "\n".join(wrong)


def test_researchers_change_nothing_through_the_admin_forms(world):
    """A researcher reads the admin site but every add, change and delete form refuses them,
    on every registered model, before anything is written."""
    client = _client(world, RESEARCHER)
    request = RequestFactory().get("/admin/")
    request.user = world.users[RESEARCHER]
    wrong = []
    for model, model_admin in admin.site._registry.items():
        name = f"admin:{model._meta.app_label}_{model._meta.model_name}"
        obj = model._base_manager.order_by("pk").first()
        if model_admin.has_add_permission(request):
            wrong.append(f"{name}: may add")
        if obj is None:
            continue
        if model_admin.has_change_permission(request, obj):
            wrong.append(f"{name}: may change")
        if model_admin.has_delete_permission(request, obj):
            wrong.append(f"{name}: may delete")
        before = _database()
        for view, args in (("add", ()), ("change", (obj.pk,)), ("delete", (obj.pk,))):
            response = client.post(reverse(f"{name}_{view}", args=args), {"post": "yes"})
            if response.status_code != 403:
                wrong.append(f"POST {name}_{view}: {response.status_code}")
        if _database() != before:
            wrong.append(f"{name}: a researcher's POST changed the database")
    assert not wrong, "\n".join(wrong)


def test_a_failed_jobs_traceback_stays_with_admins_in_the_admin_site(world):
    """Pages never show a traceback; the admin site shows it to admins, not to researchers
    (who read jobs there through their view permission)."""
    from jobs.models import Job

    failed = Job.objects.create(
        kind="rescore",
        status=Job.Status.FAILED,
        error="Internal error (KeyError)",
        traceback='File "/srv/firepool/secret_path.py", line 1',
    )
    url = reverse("admin:jobs_job_change", args=[failed.pk])
    seen = {role: _client(world, role).get(url) for role in (RESEARCHER, ADMIN, SUPERUSER)}
    assert {role: response.status_code for role, response in seen.items()} == dict.fromkeys(
        seen, 200
    )
    assert b"secret_path.py" not in seen[RESEARCHER].content
    assert b"Internal error (KeyError)" in seen[RESEARCHER].content
    assert all(b"secret_path.py" in seen[role].content for role in (ADMIN, SUPERUSER))
