"""Issue 38 §2, a property: over random histories of submits (gold tasks among them), undos,
escalations, adjudications, pauses, reinstatements, discounts and, under the adaptive
policy, refits, every count the campaign page and the people page show equals the same
count read from the campaign's exports (raw labels, csv pairs) or, where no export carries it
(labels still needed, escalations), from the database by brute force."""

import csv
import io
import json
import os
import uuid
from collections import Counter

import pytest
from django.contrib.auth import get_user_model
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

from annotation.campaign_read import live_figures as live_figures_module
from annotation.campaign_read.exports import write_export
from annotation.campaign_read.live_figures import live_figures
from annotation.campaign_read.overview import campaign_page
from annotation.judging import escalations, queue, submit
from annotation.judging.errors import AssignmentError
from annotation.models import Escalation, Pair
from annotation.people import service as people
from annotation.policy.fit import refit
from config import roles
from tests.factories import add_gold, make_campaign

SCALE = float(os.environ.get("FIREPOOL_FUZZ_SCALE", "1"))
ANNOTATORS = 3


def _export(campaign, fmt: str) -> str:
    out = io.StringIO()
    write_export(campaign, fmt, out)
    return out.getvalue()


class History(RuleBasedStateMachine):
    def __init__(self, policy: str):
        super().__init__()
        self.campaign = make_campaign(n_queries=5, depth=3, rate=0.5, seed=3, policy=policy)
        add_gold(self.campaign, 4, rate=0.3)
        User = get_user_model()
        group = roles.ensure_groups()[roles.ANNOTATOR]
        self.users = []
        for _ in range(ANNOTATORS):
            user = User.objects.create_user(f"h{uuid.uuid4().hex[:8]}", password="pw-history-1")
            user.groups.add(group)
            self.users.append(user)
        self.admin = User.objects.filter(
            is_superuser=True
        ).first() or User.objects.create_superuser(
            f"a{uuid.uuid4().hex[:8]}", password="pw-history-admin-1"
        )

    def _try(self, call):
        try:
            return call()
        except (AssignmentError, people.PeopleError):
            return None  # refused as the rules say (paused, nothing to undo, ...): no change

    @rule(who=st.integers(0, ANNOTATORS - 1), relevant=st.booleans(), fast=st.booleans())
    def answer(self, who, relevant, fast):
        user = self.users[who]
        current = queue.assign(self.campaign, user).current
        if current is not None:
            label = "relevant" if relevant else "irrelevant"
            seconds = 0.2 if fast else 4.0  # fast ones may trip the speed rule
            self._try(
                lambda: submit.submit(user, current.pair.pk, label, uuid.uuid4(), seconds=seconds)
            )

    @rule(who=st.integers(0, ANNOTATORS - 1))
    def undo(self, who):
        self._try(lambda: submit.undo(self.users[who], self.campaign))

    @rule(who=st.integers(0, ANNOTATORS - 1))
    def escalate(self, who):
        user = self.users[who]
        current = queue.assign(self.campaign, user).current
        if current is not None:
            self._try(lambda: escalations.escalate(user, current.pair.pk, "unclear", uuid.uuid4()))

    @rule(relevant=st.booleans())
    def adjudicate(self, relevant):
        pair = Pair.objects.filter(campaign=self.campaign, label_count__gt=0).order_by("?").first()
        if pair is not None:
            escalations.adjudicate(pair, self.admin, "relevant" if relevant else "irrelevant")

    @rule(who=st.integers(0, ANNOTATORS - 1))
    def pause(self, who):
        self._try(lambda: people.pause(self.campaign, self.users[who], self.admin, "checking"))

    @rule(who=st.integers(0, ANNOTATORS - 1))
    def reinstate(self, who):
        self._try(lambda: people.reinstate(self.campaign, self.users[who], self.admin))

    @rule(who=st.integers(0, ANNOTATORS - 1))
    def discount(self, who):
        people.discount(self.campaign, self.users[who], by=self.admin)

    @rule()
    def refit(self):
        if self.campaign.settings.label_policy.adaptive:
            refit(self.campaign)

    @invariant()
    def the_pages_counts_are_the_exports(self):
        campaign = self.campaign
        page = campaign_page(campaign)
        raw = [json.loads(line) for line in _export(campaign, "raw").splitlines() if line]
        live = [line for line in raw if not line.get("discounted")]
        assert page.counts.in_all == len(live)
        assert page.counts.today == len(live)  # the whole history is today
        pairs = Pair.objects.filter(campaign=campaign)
        assert page.counts.still_needed == sum(
            pairs.filter(held=False).values_list("needed", flat=True)
        )
        assert page.row.counts.pairs == pairs.count()
        rows = list(csv.DictReader(io.StringIO(_export(campaign, "csv"))))
        statuses = Counter(row["label"] for row in rows)
        counts = page.row.counts
        for status in ("relevant", "irrelevant", "disagreement"):
            assert getattr(counts, status) == statuses.get(status, 0), status
        assert (
            page.row.open_escalations
            == Escalation.objects.filter(pair__campaign=campaign, resolved_at__isnull=True).count()
        )
        # The people page: each annotator's live labels, as the raw export lists them.
        scores = live_figures(campaign).figures["campaign-scores"].value
        per_annotator = Counter(line["annotator"] for line in live)
        for person in people.campaign_people(campaign, scores=scores).people:
            assert person.labels == per_annotator.get(person.username, 0), person.username
        # The judging page's figure is the campaign page's (less gold answers under FIRE's
        # policy in a fixed order, see queue.shown_progress).
        for user in self.users:
            shown = queue.progress(campaign, user)
            assert shown.labels_given >= page.counts.in_all
            if not queue.steady(campaign):
                assert shown.labels_left == page.counts.still_needed


@pytest.mark.django_db
@pytest.mark.parametrize("policy", ["fire", "adaptive"])
def test_every_count_a_campaign_page_shows_is_the_exports(policy, monkeypatch):
    # As at scale: stored figures are not computed again in the request, so a count read from
    # them would lag the labels (the campaign page's "0 labels in all" beside "35 today").
    monkeypatch.setattr(live_figures_module, "INLINE_SECONDS", 0.0)
    run_state_machine_as_test(
        lambda: History(policy),
        settings=settings(
            max_examples=max(1, int(6 * SCALE)),
            stateful_step_count=25,
            deadline=None,
            derandomize=True,
            database=None,
            suppress_health_check=[HealthCheck.too_slow],
            phases=[Phase.explicit, Phase.reuse, Phase.generate],
        ),
    )
