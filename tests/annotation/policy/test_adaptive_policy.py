"""The adaptive label policy: settings, entry points, the live rule, the refit."""

import io
import json
import uuid

import numpy as np
import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from annotation.campaign_read.labels import load_campaign_labels
from annotation.campaigns import lifecycle
from annotation.campaigns.forms import CampaignSettingsForm
from annotation.campaigns.settings import CampaignSettings, LabelPolicy, SettingsError
from annotation.campaigns.spec import CampaignSpec
from annotation.judging import pair_state, queue, submit
from annotation.models import AnnotatorModel, Campaign, Judgement, Pair, PolicyFit
from annotation.ordering import priorities, settled
from annotation.policy import confusion, label_models
from annotation.policy import fit as policy_fit
from annotation.policy import rules as policy
from retrieval.label_sets.status import CODES
from tests.factories import make_campaign, query_dataset, random_run

# Settings and entry points.


def test_label_policy_round_trips_and_defaults_store_nothing():
    assert CampaignSettings().to_options() == {}
    chosen = CampaignSettings(label_policy=LabelPolicy("adaptive", 0.9))
    stored = chosen.to_options()
    assert stored == {"label_policy": {"name": "adaptive", "confidence": 0.9}}
    assert CampaignSettings.from_options(json.loads(json.dumps(stored))) == chosen


@pytest.mark.parametrize(
    ("stored", "named"),
    [
        ({"name": "bogus"}, "label_policy.name"),
        ({"confidence": 0.2}, "label_policy.confidence"),
        ({"confidence": 1.0}, "label_policy.confidence"),
        ({"confidence": "high"}, "label_policy.confidence"),
        ({"cap": 3}, "label_policy: unknown setting cap"),
    ],
)
def test_bad_label_policies_are_refused_by_name(stored, named):
    with pytest.raises(SettingsError, match=named):
        CampaignSettings.from_options({"label_policy": stored})


def test_the_spec_of_an_adaptive_campaign_has_no_double_sample_and_its_own_cap():
    spec = CampaignSpec.from_values({"name": "a", "policy": "adaptive", "second_label_rate": 0.3})
    assert spec.settings.label_policy == LabelPolicy("adaptive", policy.DEFAULT_CONFIDENCE)
    assert spec.second_label_rate == 0.0
    assert spec.max_labels == policy.DEFAULT_ADAPTIVE_CAP
    assert (
        CampaignSpec.from_values({"name": "a", "policy": "adaptive", "max_labels": 7}).max_labels
        == 7
    )
    fire = CampaignSpec.from_values({"name": "f"})
    assert fire.max_labels == policy.DEFAULT_CAP
    assert fire.second_label_rate == policy.DEFAULT_SECOND_LABEL_RATE
    assert not fire.settings.label_policy.adaptive


@pytest.mark.parametrize(
    ("values", "field"),
    [
        ({"policy": "bogus"}, "policy"),
        ({"confidence": 0.3}, "confidence"),
        ({"confidence": 1}, "confidence"),
    ],
)
def test_the_form_names_a_bad_policy_field(values, field):
    form = CampaignSettingsForm({"name": "x", "depth": 3, **values})
    assert not form.is_valid()
    assert field in form.errors


def test_the_form_takes_an_adaptive_policy():
    form = CampaignSettingsForm({"name": "x", "depth": 3, "policy": "adaptive", "confidence": 0.9})
    assert form.is_valid(), form.errors
    spec = form.spec()
    assert spec.settings.label_policy == LabelPolicy("adaptive", 0.9)
    assert (spec.max_labels, spec.second_label_rate) == (policy.DEFAULT_ADAPTIVE_CAP, 0.0)


@pytest.fixture
def dataset(db):
    dataset, _, _ = query_dataset("ap", n=6)
    random_run(dataset, "r0", seed=1)
    return dataset


def _create(dataset, *flags):
    out = io.StringIO()
    call_command(
        "create_campaign", "--dataset", dataset.name, "--runs", "r0", "--depth", "3",
        "--format", "json", *flags, stdout=out,
    )  # fmt: skip
    return json.loads(out.getvalue())


def test_the_command_creates_an_adaptive_campaign(dataset):
    made = _create(dataset, "--name", "ad", "--policy", "adaptive", "--confidence", "0.9")
    assert made["policy"] == "adaptive"
    assert made["second_label_pairs"] == 0
    campaign = Campaign.objects.get(name="ad")
    assert campaign.max_labels == policy.DEFAULT_ADAPTIVE_CAP
    assert campaign.second_label_rate == 0.0
    assert campaign.settings.label_policy == LabelPolicy("adaptive", 0.9)
    assert set(campaign.pairs.values_list("needed", flat=True)) == {1}
    fire = _create(dataset, "--name", "fi")
    assert fire["policy"] == "fire" and fire["max_labels"] == policy.DEFAULT_CAP
    assert Campaign.objects.get(name="fi").options == {}


@pytest.mark.parametrize(
    ("flags", "named"),
    [(["--confidence", "0.2"], "--confidence"), (["--confidence", "2"], "--confidence")],
)
def test_the_command_names_a_bad_confidence(dataset, flags, named):
    with pytest.raises(CommandError, match=named):
        _create(dataset, "--name", "bad", "--policy", "adaptive", *flags)
    assert not Campaign.objects.filter(name="bad").exists()


def test_the_command_refuses_an_unknown_policy(dataset):
    with pytest.raises(CommandError, match="policy"):
        _create(dataset, "--name", "bad", "--policy", "bogus")


def test_the_policy_is_fixed_once_pooled(db):
    campaign = make_campaign(policy="adaptive")
    spec = lifecycle.current_spec(campaign)
    values = lifecycle.form_values(spec)
    assert (values["policy"], values["confidence"]) == ("adaptive", policy.DEFAULT_CONFIDENCE)
    for change, field in (({"policy": "fire"}, "policy"), ({"confidence": 0.8}, "confidence")):
        asked = CampaignSpec.from_values({**values, **change})
        with pytest.raises(lifecycle.LifecycleError, match=field):
            lifecycle.edit_campaign(campaign, asked)
    # Unchanged values are taken (the edit form posts them back).
    lifecycle.edit_campaign(campaign, CampaignSpec.from_values({**values, "lease_seconds": 60}))


def test_the_edit_page_keeps_the_policy(db, people, client):
    """The edit page shows the policy disabled; a posted change is ignored, never applied."""
    campaign = make_campaign(policy="adaptive")
    values = lifecycle.form_values(lifecycle.current_spec(campaign))
    client.force_login(people["admin"])
    page = client.get(f"/campaigns/{campaign.pk}/edit/").content.decode()
    assert 'name="policy"' in page and "disabled" in page.split('name="policy"')[1].split(">")[0]
    posted = {k: "" if v is None else v for k, v in {**values, "policy": "fire"}.items()}
    response = client.post(f"/campaigns/{campaign.pk}/edit/", posted)
    assert response.status_code == 302
    campaign.refresh_from_db()
    assert campaign.settings.label_policy.adaptive


# The live rule.


def _people(django_user_model, *names):
    return [django_user_model.objects.create_user(n, password="pw-adaptive-1") for n in names]


def _model(campaign, annotator, accuracy):
    AnnotatorModel.objects.update_or_create(
        campaign=campaign,
        annotator=annotator,
        defaults={
            "sensitivity": accuracy,
            "specificity": accuracy,
            "evidence": 100,
            "fitted_at": timezone.now(),
        },
    )


def _judge(campaign, annotator, label="relevant"):
    """Serve the annotator their next pair and label it; the pair (None: nothing served)."""
    current = queue.assign(campaign, annotator).current
    if current is None:
        return None
    submit.submit(annotator, current.pair.pk, label, uuid.uuid4())
    return Pair.objects.get(pk=current.pair.pk)


def _expected(campaign, pair):
    """needed and status recomputed from scratch, as the read model computes them."""
    seen = label_models.snapshot(campaign, [(pair.pk, pair.pool_row)])
    adjudicated = [CODES[pair.adjudicated] if pair.adjudicated else -1]
    needed, code = label_models.adaptive_state(campaign, seen.total, seen.posterior, adjudicated)
    return int(needed[0]), int(code[0])


@pytest.mark.django_db
def test_a_careful_annotator_settles_a_pair_with_one_label(django_user_model):
    campaign = make_campaign(n_queries=1, policy="adaptive")
    (careful,) = _people(django_user_model, "careful")
    _model(campaign, careful, 0.99)
    pair = _judge(campaign, careful)
    assert (pair.label_count, pair.needed, pair.open_slots) == (1, 0, 0)
    assert pair.status == "relevant"
    pair = _judge(campaign, careful, "irrelevant")
    assert (pair.needed, pair.status) == (0, "irrelevant")


@pytest.mark.django_db
def test_an_annotator_at_the_prior_needs_company(django_user_model):
    """Credited 0.8 each way: one label gives 0.8, two agreeing 0.94, three 0.985."""
    campaign = make_campaign(n_queries=1, policy="adaptive")
    people = _people(django_user_model, "a", "b", "c")
    pair = _judge(campaign, people[0])
    assert (pair.needed, pair.status) == (1, "relevant")
    assert _judge(campaign, people[1]).pk == pair.pk
    pair.refresh_from_db()
    assert (pair.label_count, pair.needed) == (2, 1)
    assert _judge(campaign, people[2]).pk == pair.pk
    pair.refresh_from_db()
    assert (pair.label_count, pair.needed, pair.status) == (3, 0, "relevant")


@pytest.mark.django_db
def test_spammers_never_settle_a_pair_and_it_stops_at_the_cap(django_user_model):
    campaign = make_campaign(n_queries=1, depth=1, policy="adaptive", max_labels=3)
    spammers = _people(django_user_model, "s1", "s2", "s3", "s4")
    for spammer in spammers:
        _model(campaign, spammer, 0.5)
    pair = campaign.pairs.get()
    for i, spammer in enumerate(spammers[:3]):
        served = _judge(campaign, spammer, "relevant" if i % 2 else "irrelevant")
        assert served.pk == pair.pk
        assert served.label_count == i + 1
        assert served.needed == (1 if i < 2 else 0)
    pair.refresh_from_db()
    assert pair.status == "disagreement"  # a spammer's labels leave it at the prior, 0.5
    assert _judge(campaign, spammers[3]) is None  # the cap holds


@pytest.mark.django_db
def test_each_extra_label_comes_from_another_annotator(django_user_model):
    campaign = make_campaign(n_queries=2, policy="adaptive")
    first, second = _people(django_user_model, "first", "second")
    labelled = []
    while (pair := _judge(campaign, first)) is not None:
        labelled.append(pair.pk)
    # Every pair still needs a label, yet none is served to the one who judged it.
    assert sorted(labelled) == sorted(campaign.pairs.values_list("pk", flat=True))
    assert set(campaign.pairs.values_list("label_count", "needed")) == {(1, 1)}
    served = []
    while (pair := _judge(campaign, second)) is not None:
        served.append(pair.pk)
    assert sorted(served) == sorted(labelled)
    for pair_id in labelled:
        assert Judgement.objects.filter(pair_id=pair_id).values("annotator").distinct().count() == 2


@pytest.mark.django_db
def test_undo_and_discount_recompute(django_user_model):
    campaign = make_campaign(n_queries=1, policy="adaptive")
    careful, other = _people(django_user_model, "careful", "other")
    _model(campaign, careful, 0.99)
    pair = _judge(campaign, careful)
    assert pair.needed == 0
    submit.undo(careful, campaign)
    pair.refresh_from_db()
    assert (pair.label_count, pair.needed, pair.status) == (0, 1, "pending")
    # Judged again, then a second label from someone at the prior on another pair.
    pair = _judge(campaign, careful)
    assert (pair.label_count, pair.needed) == (1, 0)
    # Discounting the careful annotator's label: the pair needs labels again.
    Judgement.objects.filter(pair=pair, annotator=careful).update(
        undone_at=timezone.now(), discounted_at=timezone.now()
    )
    pair_state.recount_labels([pair.pk], campaign)
    pair.refresh_from_db()
    assert (pair.label_count, pair.needed, pair.status) == (0, 1, "pending")
    other_pair = _judge(campaign, other)
    assert (other_pair.needed, other_pair.status) == (1, "relevant")
    assert _expected(campaign, other_pair) == (1, CODES["relevant"])


@pytest.mark.django_db
def test_the_read_model_resolves_as_the_live_path(django_user_model):
    campaign = make_campaign(n_queries=2, policy="adaptive")
    careful, prior, spammer = _people(django_user_model, "careful", "prior", "spammer")
    _model(campaign, careful, 0.97)
    _model(campaign, spammer, 0.5)
    for annotator, label in ((careful, "irrelevant"), (prior, "relevant"), (spammer, "relevant")):
        for _ in range(3):
            _judge(campaign, annotator, label)
    read = load_campaign_labels(campaign)
    for pk, status in campaign.pairs.values_list("pk", "status"):
        assert read.status[pk - read.first_pair_id] == CODES[status]


@pytest.mark.django_db
def test_fire_campaigns_keep_fires_rule(django_user_model):
    campaign = make_campaign(n_queries=1)
    (careful,) = _people(django_user_model, "careful")
    _model(campaign, careful, 0.99)  # ignored: fire does not weigh annotators
    pair = _judge(campaign, careful)
    assert (pair.needed, pair.status) == (0, "relevant")
    assert not campaign.settings.label_policy.adaptive


# Strata.


@pytest.mark.django_db
def test_strata_are_the_pool_strata_of_each_pairs_row():
    campaign = make_campaign(n_queries=2, depth=3, policy="adaptive")
    rows = np.array(sorted(campaign.pairs.values_list("pool_row", flat=True)))
    ranks = label_models.provenance(campaign).ranks
    expected = confusion.pool_strata(ranks)[rows]
    assert label_models.strata(campaign, rows).tolist() == expected.tolist()
    # One run: its best rank tells the strata apart (rank r, stratum group + r - 1).
    assert len(set(expected.tolist())) == 3
    assert label_models.strata(campaign, [10**6]).tolist() == [0]


def test_priors_fall_back_to_the_class_prior():
    priors = np.array([0.9, 0.2])
    assert label_models.prior_of(priors, [0, 1, 2]).tolist() == [0.9, 0.2, confusion.CLASS_PRIOR]
    assert label_models.prior_of(np.zeros(0), [0]).tolist() == [confusion.CLASS_PRIOR]


# The refit.


@pytest.mark.django_db
def test_apply_refit_changes_labelled_pairs_but_not_one_labelled_since(
    django_user_model, monkeypatch
):
    campaign = make_campaign(n_queries=2, policy="adaptive")
    careful, late = _people(django_user_model, "careful", "late")
    labelled = [_judge(campaign, careful).pk for _ in range(4)]
    assert set(Pair.objects.filter(pk__in=labelled).values_list("needed", flat=True)) == {1}
    _model(campaign, careful, 0.99)
    raced = labelled[0]
    original = pair_state.lock_pairs

    _model(campaign, late, 0.99)

    def label_in_between(pair_ids):
        # A careful contrarian's label lands after the refit read its snapshot.
        pair = Pair.objects.get(pk=raced)
        Judgement.objects.create(pair=pair, annotator=late, label="irrelevant")
        pair_state.count_label(pair, campaign, "irrelevant", +1)  # as the submit counts it
        original(pair_ids)

    monkeypatch.setattr(pair_state, "lock_pairs", label_in_between)
    changed = pair_state.apply_refit(campaign)
    assert changed.written == 3
    for pk in labelled[1:]:
        pair = Pair.objects.get(pk=pk)
        assert (pair.needed, pair.open_slots, pair.status) == (0, 0, "relevant")
    pair = Pair.objects.get(pk=raced)
    assert pair.label_count == 2  # its own writer's values stand, not the refit's
    assert (pair.needed, pair.status) == (1, "disagreement")


@pytest.mark.django_db
def test_the_refit_command_fits_stores_and_recomputes(django_user_model):
    campaign = make_campaign(n_queries=3, policy="adaptive")
    people = _people(django_user_model, "a", "b", "c")
    truth = {pk: (pk % 3 == 0) for pk in campaign.pairs.values_list("pk", flat=True)}
    for annotator in people:
        while (current := queue.assign(campaign, annotator).current) is not None:
            label = "relevant" if truth[current.pair.pk] else "irrelevant"
            submit.submit(annotator, current.pair.pk, label, uuid.uuid4())
    out = io.StringIO()
    call_command("refit_policy", "--campaign", campaign.name, "--format", "json", stdout=out)
    summary = json.loads(out.getvalue())
    assert summary["annotators"] == 3
    assert summary["labels"] == Judgement.objects.filter(pair__campaign=campaign).count()
    assert len(summary["priors"]) == label_models.n_strata(campaign)
    fit = PolicyFit.objects.get(campaign=campaign)
    assert fit.labels == summary["labels"] and fit.requested_at is None
    models = AnnotatorModel.objects.filter(campaign=campaign)
    assert models.count() == 3
    by_name = {m.annotator.username: m for m in models.select_related("annotator")}
    # "a" gave every pair's first label: no evidence on them, so still at the prior; the
    # others agreed with the pairs' labels and are trusted more than the prior.
    assert (by_name["a"].evidence, by_name["a"].sensitivity) == (0, confusion.PRIOR_ACCURACY)
    for name in ("b", "c"):
        assert by_name[name].evidence == 9
        assert by_name[name].sensitivity > confusion.PRIOR_ACCURACY
        assert by_name[name].specificity > confusion.PRIOR_ACCURACY
    for pair in campaign.pairs.all():
        assert (pair.needed, CODES[pair.status]) == _expected(campaign, pair)


@pytest.mark.django_db
def test_the_refit_reads_only_labelled_pairs_and_fits_as_over_every_pair(
    django_user_model, monkeypatch
):
    """The refit reads only the pairs with labels or a verdict; its fit equals one over every
    pooled pair (adjudicated pairs with and without labels, an undone label, unlabelled pairs
    in several strata)."""
    campaign = make_campaign(n_queries=6, policy="adaptive")
    people = _people(django_user_model, "a", "b", "c")
    truth = {pk: pk % 3 == 0 for pk in campaign.pairs.values_list("pk", flat=True)}
    for n, annotator in enumerate(people):
        for _ in range(6 + 4 * n):
            if (current := queue.assign(campaign, annotator).current) is None:
                break
            label = "relevant" if truth[current.pair.pk] != (n == 2) else "irrelevant"
            submit.submit(annotator, current.pair.pk, label, uuid.uuid4())
    submit.undo(people[0], campaign)
    labelled = campaign.pairs.filter(label_count__gt=0).order_by("pk")
    unlabelled = campaign.pairs.filter(label_count=0).order_by("pk")
    assert unlabelled.count() >= 2
    pair_state.adjudicate(labelled.first(), people[0], "irrelevant")
    pair_state.adjudicate(unlabelled.first(), people[0], "relevant")
    fits, real = [], confusion.fit
    monkeypatch.setattr(confusion, "fit", lambda *a, **k: fits.append(real(*a, **k)) or fits[-1])
    policy_fit.refit(campaign)
    (every,) = fits
    pairs = list(campaign.pairs.order_by("pk").values_list("pk", "pool_row", "adjudicated"))
    at = {pk: i for i, (pk, _, _) in enumerate(pairs)}
    live = Judgement.objects.filter(pair__campaign=campaign, undone_at__isnull=True)
    rows = list(live.order_by("pk").values_list("pk", "pair_id", "annotator_id", "label"))
    items = np.array([at[pair] for _, pair, _, _ in rows])
    who, annotator_index = np.unique([a for _, _, a, _ in rows], return_inverse=True)
    brute = real(
        items,
        annotator_index,
        np.array([label == "relevant" for *_, label in rows], np.int64),
        len(pairs),
        len(who),
        first=confusion.first_labels(items, np.array([pk for pk, *_ in rows])),
        known=np.array([CODES[a] if a else policy.NOT_ADJUDICATED for _, _, a in pairs]),
        strata=label_models.strata(campaign, [row for _, row, _ in pairs]),
        n_strata=label_models.n_strata(campaign),
    )
    # The labels' order (the database's) only moves the sums' last bits.
    assert brute.iterations == every.iterations > 1
    assert np.allclose(brute.prior, every.prior, rtol=0, atol=1e-12)
    for part in ("sensitivity", "specificity", "evidence"):
        found, expected = getattr(every.confusion, part), getattr(brute.confusion, part)
        assert np.allclose(found, expected, rtol=0, atol=1e-12)


@pytest.mark.django_db
def test_only_adaptive_campaigns_refit():
    campaign = make_campaign()
    with pytest.raises(CommandError, match="fire"):
        call_command("refit_policy", "--campaign", campaign.name)


@pytest.mark.django_db
def test_a_refit_is_queued_after_enough_labels(
    django_user_model, monkeypatch, django_capture_on_commit_callbacks
):
    from jobs.models import Job

    monkeypatch.setattr(label_models, "REFIT_EVERY", 1)
    monkeypatch.setattr(label_models, "MIN_NEW_LABELS", 3)
    submitted = []
    monkeypatch.setattr(
        label_models.runner, "submit", lambda kind, data: submitted.append((kind, data))
    )
    campaign = make_campaign(n_queries=2, policy="adaptive")
    (annotator,) = _people(django_user_model, "a")
    with django_capture_on_commit_callbacks(execute=True):
        for _ in range(5):
            _judge(campaign, annotator)
    assert submitted == [(policy_fit.JOB_KIND, {"campaign": campaign.name})]  # claimed once
    assert PolicyFit.objects.get(campaign=campaign).requested_at is not None
    assert not Job.objects.exists()


@pytest.mark.django_db
def test_a_refit_waits_ten_times_as_long_as_the_last_took(monkeypatch):
    from datetime import timedelta

    monkeypatch.setattr(label_models, "MIN_NEW_LABELS", 0)
    campaign = make_campaign(n_queries=1, policy="adaptive")
    now = timezone.now()
    PolicyFit.objects.update_or_create(
        campaign=campaign,
        defaults={"labels": 0, "fitted_at": now, "seconds": 3.0, "requested_at": None},
    )
    assert not label_models.refit_due(campaign, now + timedelta(seconds=29))
    assert label_models.refit_due(campaign, now + timedelta(seconds=31))
    assert not label_models.refit_due(campaign, now + timedelta(seconds=32))  # claimed once
    PolicyFit.objects.filter(campaign=campaign).update(seconds=0.01, requested_at=None)
    assert not label_models.refit_due(campaign, now + timedelta(seconds=4))  # MIN_INTERVAL
    assert label_models.refit_due(campaign, now + label_models.MIN_INTERVAL)


@pytest.mark.django_db
def test_the_refit_job_runs(django_user_model):
    from jobs.registry import get_kind
    from jobs.runner import check_arguments

    campaign = make_campaign(n_queries=1, policy="adaptive")
    (annotator,) = _people(django_user_model, "a")
    _judge(campaign, annotator)
    kind = get_kind(policy_fit.JOB_KIND)
    arguments = check_arguments(kind, {"campaign": campaign.name})

    class Reporter:
        job_id = 0

        def step(self, *args, **kwargs):
            pass

        def advance(self, *args, **kwargs):
            pass

    result = kind.run(Reporter(), **arguments)
    assert result["campaign"] == campaign.name and result["labels"] == 1
    assert PolicyFit.objects.get(campaign=campaign).seconds > 0  # paces the next refit


# The metric-aware order: labels only where they can change a score.


def _by_rank(campaign):
    """The campaign's pairs keyed by their rank in its one run (pool order is rank order)."""
    return {rank: pair for rank, pair in enumerate(campaign.pairs.order_by("pool_row"), start=1)}


def _leased_to(pair, annotator) -> bool:
    return pair.leases.filter(annotator=annotator).exists()


@pytest.mark.django_db
def test_a_settled_first_hit_parks_everything_below_it(django_user_model):
    campaign = make_campaign(n_queries=1, depth=3, policy="adaptive", judging_order="metric-first")
    careful, other = _people(django_user_model, "careful", "other")
    _model(campaign, careful, 0.99)
    pair = _judge(campaign, careful)  # rank 1 first: the most valuable task
    assert pair.pk == _by_rank(campaign)[1].pk
    assert (pair.status, pair.needed) == ("relevant", 0)
    below = _by_rank(campaign)
    # C@1, C@5 and C@10 of the one run are settled: ranks 2 and 3 can change no score. Rank
    # 2 was preloaded for "careful" (a pair on someone's screen keeps what it needed when
    # leased); rank 3 is parked, and nobody else is served anything.
    assert _leased_to(below[2], careful) and below[2].needed == 1
    assert below[3].needed == 0
    assert _judge(campaign, other) is None


@pytest.mark.django_db
def test_an_unsure_first_hit_is_asked_again_before_anything_below_it(django_user_model):
    campaign = make_campaign(n_queries=1, depth=3, policy="adaptive", judging_order="metric-first")
    first, second, third = _people(django_user_model, "first", "second", "third")
    top = _judge(campaign, first)  # at the prior: 0.8 relevant, below the target
    assert top.pk == _by_rank(campaign)[1].pk and top.needed == 1
    ranks = _by_rank(campaign)
    assert ranks[3].needed == 0  # parked while rank 1 reads relevant (rank 2: preloaded)
    assert ranks[1].open_slots == 1  # open to another annotator at once
    again = _judge(campaign, second, "irrelevant")  # the extra label, from another annotator
    assert again.pk == top.pk
    ranks = _by_rank(campaign)
    assert ranks[1].status in ("disagreement", "irrelevant")
    # Rank 1 no longer reads relevant: rank 3 decides C@5 and C@10 again and is asked for.
    assert ranks[3].needed == 1
    served = _judge(campaign, third)
    assert served is not None


@pytest.mark.django_db
def test_a_refit_requeues_the_campaign_by_value(django_user_model):

    campaign = make_campaign(n_queries=1, depth=3, policy="adaptive", judging_order="metric-first")
    careful, other = _people(django_user_model, "careful", "other")
    top = _judge(campaign, careful)  # relevant, at the prior: asked again
    assert top.needed == 1
    # A refit now trusts "careful": the rank-1 label settles the query.
    _model(campaign, careful, 0.995)
    applied = pair_state.apply_refit(campaign, reopen=False)
    assert applied.written == 1
    assert priorities.requeue(campaign, applied.captions) == 1
    ranks = _by_rank(campaign)
    assert (ranks[1].needed, ranks[3].needed) == (0, 0)
    assert _judge(campaign, other) is None  # rank 2 is only on careful's screen


@pytest.mark.django_db
def test_the_campaign_pages_show_the_target_and_what_is_settled(people, client):
    campaign = make_campaign(n_queries=1, depth=3, policy="adaptive", judging_order="metric-first")
    _judge(campaign, people["annotator"])  # rank 1 relevant, at the prior: below the target
    status = settled.judging_status(campaign)
    assert (status.policy, status.confidence, status.below_target) == ("adaptive", 0.95, 1)
    assert [share for _, share in status.settled[0].shares] == [0.0, 0.0, 0.0]
    client.force_login(people["admin"])
    page = client.get(f"/campaigns/{campaign.pk}/").content.decode()
    assert "adaptive: one label per pair" in page
    assert 'id="progress-below-target">1<' in page and 'id="settled-metrics"' in page
    agreement = client.get(f"/campaigns/{campaign.pk}/agreement/").content.decode()
    assert "1 labelled pairs below the 95.0% target" in agreement
    assert 'id="confident-metrics"' in agreement


@pytest.mark.django_db
def test_an_adaptive_label_set_keeps_each_pairs_posterior_for_intervals(django_user_model):
    from annotation.campaign_read.resolution import resolve_campaign
    from retrieval.label_sets.service import load_judged
    from retrieval.scoring.rescoring_service import rescore_dataset

    campaign = make_campaign(n_queries=2, depth=2, policy="adaptive")
    careful, unknown = _people(django_user_model, "careful", "unknown")
    _model(campaign, careful, 0.999)
    _judge(campaign, careful)  # sure
    _judge(campaign, unknown)  # at the prior: 0.8
    label_set = resolve_campaign(campaign, name="adaptive-set", method="majority")
    judged = load_judged(label_set)
    expected = {
        (pair.caption_id, pair.video_id): label_models.snapshot(
            campaign, [(pair.pk, pair.pool_row)]
        ).posterior[0]
        for pair in campaign.pairs.exclude(status="pending")
    }
    keys = zip(judged.caption_ids.tolist(), judged.video_ids.tolist(), strict=True)
    got = dict(zip(keys, judged.confidence, strict=True))
    assert got.keys() == expected.keys()
    for pair, posterior in expected.items():
        assert got[pair] == pytest.approx(posterior)
    assert sorted(round(policy.certainty(p), 3) for p in got.values()) == [0.8, 0.999]
    scored = rescore_dataset(campaign.dataset, label_set)
    intervals = scored.result.intervals["m"]
    assert "label noise" in intervals["C@1"].parts or "label noise" in intervals["C@5"].parts
