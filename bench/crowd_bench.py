"""Measured A/B/C crowd benchmark on the demo world's truth.

Builds a demo world (``manage.py demo``, ``--videos`` clips, its four models) in a temporary
SQLite database, pools the four runs at depth 10 into one campaign per configuration, and lets
the same seeded crowd of simulated annotators judge each through the real assignment service
(:func:`annotation.simulation.live.simulate`: qualification, gold, pausing included), under
FIRE's policy (one label, a second for 10%, a third when two disagree):

- reference: a spammer-free crowd (careful annotators in the spammers' place), as A;
- A: the plain protocol: majority, no gold, no qualification, no pausing;
- B: qualification (20 training pairs, threshold 0.9), 5% gold in the queue, automatic
  pausing; the bench acts as the admin and discounts every paused annotator's labels, so
  their pairs go back to the queue, and lets the crowd judge again until nobody new is paused;
- C: B's labels resolved by Dawid-Skene (gold answers as known items).

All campaigns are created before any is judged, so none reuses another's labels. The crowd is
the issue's: 60% careful (2% error), 20% normal (8%), 10% random spammers, 10% always "not
relevant"; times per judgement are the profiles' defaults (4 s, spammers 0.8 s) unless
``--spammer-seconds`` says otherwise. A paused or failed annotator's qualification may be
retried at once (cool-down 0: the bench runs in minutes, a campaign in days).

Gold pairs come from a small, separately judged set: ``--gold`` pairs drawn at random from
the four runs' ranks 11-20 (below the pool depth, so never campaign pairs), with labels taken
from the demo world's truth, as an admin's trusted labels would be. Their answers
(qualification and queue) are not campaign labels; label overhead = (gold + qualification
answers) / campaign labels (discounted labels included: they were paid for).

For each configuration: accuracy of the resolved labels against the truth (a disagreement
counts as wrong), the same on truly relevant pairs, C@1 and AP of each model re-scored with
the label set against the same metrics with the true labels of the same pooled pairs, labels
spent, and annotators paused. Run with::

    nice -n 5 .venv/bin/python bench/crowd_bench.py [--videos 1500] [--annotators 20]
"""

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path

import numpy as np
from harness import machine, save_var, temporary_django

DEMO_RUNS = ("random", "minilm", "mme", "jpose")
DEPTH = 10
CROWD = "careful=0.6:0.02,normal=0.2:0.08,spammer=0.1:random,lazy=0.1:always-irrelevant"
CLEAN = "careful=0.8:0.02,normal=0.2:0.08"
SPAMMERS = ("spammer", "lazy")
TARGET_ACCURACY_GAP = 0.01
TARGET_C1_GAP = 0.01
TARGET_OVERHEAD = 0.12


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def crowd_profiles(text: str, spammer_seconds: float | None):
    from dataclasses import replace

    from annotation.simulation.live import parse_profiles

    profiles = parse_profiles(text)
    if spammer_seconds is None:
        return profiles
    return tuple(replace(p, seconds=spammer_seconds) if p.name in SPAMMERS else p for p in profiles)


def truth_of(dataset, caption_ids: np.ndarray, video_ids: np.ndarray) -> np.ndarray:
    """The demo world's exact relevance of each (caption id, video id) pair."""
    from retrieval.datasets.demo.service import ground_truth_relevance
    from retrieval.models import Caption, Video

    caption_keys, video_keys, matrix = ground_truth_relevance(
        dataset, caption_ids=np.unique(caption_ids).tolist()
    )
    row = {key: i for i, key in enumerate(caption_keys)}
    col = {key: j for j, key in enumerate(video_keys)}
    caption_row = {
        pk: row[key]
        for pk, key in Caption.objects.filter(pk__in=np.unique(caption_ids).tolist()).values_list(
            "pk", "key"
        )
    }
    video_col = {
        pk: col[key] for pk, key in Video.objects.filter(dataset=dataset).values_list("pk", "key")
    }
    rows = np.array([caption_row[int(c)] for c in caption_ids], dtype=np.int64)
    cols = np.array([video_col[int(v)] for v in video_ids], dtype=np.int64)
    return matrix[rows, cols].astype(bool)


def gold_file(dataset, runs, n_gold: int, seed: int, folder: Path) -> tuple[Path, float]:
    """A JSONL gold file: ``n_gold`` pairs from the runs' ranks 11-20 that no run ranks in its
    top 10 (so never pooled), labelled with the truth; and their relevant share."""
    from retrieval.search.runs_service import load_run

    loaded = [load_run(run) for run in runs]
    pooled, deeper = set(), set()
    for lists in loaded:
        for q, items in zip(lists.query_ids.tolist(), lists.item_ids.tolist(), strict=True):
            pooled.update((q, v) for v in items[:DEPTH] if v >= 0)
            deeper.update((q, v) for v in items[DEPTH : 2 * DEPTH] if v >= 0)
    from retrieval.models import Caption, Video

    own = set(Caption.objects.filter(dataset=dataset).values_list("pk", "video_id"))
    candidates = sorted(deeper - pooled - own)
    rng = np.random.default_rng(seed + 7)
    chosen = [candidates[i] for i in rng.choice(len(candidates), n_gold, replace=False)]
    captions = np.array([c for c, _ in chosen])
    videos = np.array([v for _, v in chosen])
    truth = truth_of(dataset, captions, videos)
    caption_key = dict(Caption.objects.filter(pk__in=captions.tolist()).values_list("pk", "key"))
    video_key = dict(Video.objects.filter(pk__in=videos.tolist()).values_list("pk", "key"))
    path = folder / "gold.jsonl"
    with path.open("w") as out:
        for c, v, rel in zip(captions.tolist(), videos.tolist(), truth.tolist(), strict=True):
            label = "relevant" if rel else "irrelevant"
            out.write(
                json.dumps(
                    {
                        "caption_key": caption_key[c],
                        "video_key": video_key[v],
                        "label": label,
                        "explanation": f"the demo world's truth: {label}",
                    }
                )
                + "\n"
            )
    return path, float(truth.mean())


def make_campaign(dataset, runs, name: str, seed: int, *, gold: bool, adaptive: bool = False):
    """A campaign of the four runs at depth 10; with ``gold``, B's settings, else A's; with
    ``adaptive``, D's: B's quality control under the adaptive policy (confidence 0.95, at
    most 5 labels) and the metric-first order."""
    from annotation.campaigns.service import CampaignSpec, create_campaign
    from annotation.campaigns.settings import (
        CampaignSettings,
        GoldSettings,
        JudgingSettings,
        LabelPolicy,
    )
    from annotation.policy import rules as policy

    if gold:  # retries at once: the bench runs in minutes
        settings = GoldSettings(rate=0.05, qualification=True, threshold=0.9, cooldown_seconds=0)
    else:  # the plain protocol: nobody is paused
        settings = GoldSettings(rate=0.0, floor_seconds=0.0)
    chosen = CampaignSettings(gold=settings)
    extra = {}
    if adaptive:
        chosen = CampaignSettings(
            gold=settings,
            judging=JudgingSettings(strategy="metric-first"),
            label_policy=LabelPolicy(policy.ADAPTIVE, policy.DEFAULT_CONFIDENCE),
        )
        extra = {"second_label_rate": 0.0, "max_labels": policy.DEFAULT_ADAPTIVE_CAP}
    spec = CampaignSpec(name=name, depth=DEPTH, seed=seed, settings=chosen, **extra)
    return create_campaign(dataset, runs, spec)


def judge(campaign, profiles, annotators: int, seed: int, *, requeue: bool) -> dict:
    """Let the crowd judge until done; with ``requeue``, discount paused annotators' labels
    and judge again until nobody new is paused. Returns who was paused, per profile."""
    from django.contrib.auth import get_user_model

    from annotation.models import AnnotatorStanding
    from annotation.people import service as people
    from annotation.simulation.live import simulate

    discounted: set[int] = set()
    adaptive = campaign.settings.label_policy.adaptive
    for round_ in range(20):
        random.seed(seed * 1000 + round_)  # gold_queue draws gold tasks with `random`
        result = simulate(campaign, annotators=annotators, seed=seed + round_, profiles=profiles)
        log(f"  {campaign.name}: round {round_ + 1}, {result.judgements:,} judgements")
        if adaptive:
            # The submits queue background refits (paced by their own cost); refit once
            # more when the crowd runs out of work, and judge on while that asks for more.
            from annotation.policy.fit import refit
            from jobs.models import Job

            ran = Job.objects.filter(kind="refit-policy").values_list("status", flat=True)
            log(f"  {campaign.name}: background refits so far: {sorted(ran)}")
            fitted = refit(campaign)
            log(f"  {campaign.name}: refit, {fitted.pairs_changed} pairs changed")
            if result.judgements and (fitted.pairs_changed or fitted.queue_changed):
                continue
        if not requeue:
            break
        paused = set(
            AnnotatorStanding.objects.filter(campaign=campaign, paused_at__isnull=False)
            .exclude(annotator_id__in=discounted)
            .values_list("annotator_id", flat=True)
        )
        if not paused:
            break
        for user in get_user_model().objects.filter(pk__in=paused):
            n = people.discount(campaign, user)
            log(f"  {campaign.name}: discounted {n} labels of paused {user.username}")
        discounted |= paused
    return paused_by_profile(campaign)


def paused_by_profile(campaign) -> dict[str, tuple[int, int]]:
    """Profile name -> (annotators paused, annotators who judged or trained here)."""
    from annotation.models import AnnotatorStanding, GoldJudgement, Judgement

    paused = set(
        AnnotatorStanding.objects.filter(campaign=campaign, paused_at__isnull=False).values_list(
            "annotator__username", flat=True
        )
    )
    active = set(
        Judgement.objects.filter(pair__campaign=campaign).values_list(
            "annotator__username", flat=True
        )
    ) | set(
        GoldJudgement.objects.filter(gold_pair__campaign=campaign).values_list(
            "annotator__username", flat=True
        )
    )
    counts: dict[str, list[int]] = {}
    for name in active:
        profile = name.split("-")[1]
        entry = counts.setdefault(profile, [0, 0])
        entry[0] += name in paused
        entry[1] += 1
    return {k: (v[0], v[1]) for k, v in sorted(counts.items())}


def qualification_failed(campaign) -> dict[str, int]:
    """Profile name -> annotators who trained and were never admitted."""
    from annotation.models import QualificationAttempt

    tried: dict[str, bool] = {}
    for name, passed, admin in QualificationAttempt.objects.filter(campaign=campaign).values_list(
        "annotator__username", "passed", "admitted_by"
    ):
        tried[name] = tried.get(name, False) or bool(passed) or admin is not None
    failed: dict[str, int] = {}
    for name, ok in tried.items():
        if not ok:
            profile = name.split("-")[1]
            failed[profile] = failed.get(profile, 0) + 1
    return failed


def spent(campaign) -> dict[str, int]:
    """Labels paid for: campaign labels (discounted ones too), gold and training answers."""
    from annotation.models import GoldJudgement, Judgement

    labels = Judgement.objects.filter(pair__campaign=campaign)
    gold = GoldJudgement.objects.filter(gold_pair__campaign=campaign)
    return {
        "campaign": labels.count(),
        "discounted": labels.filter(discounted_at__isnull=False).count(),
        "gold": gold.filter(purpose=GoldJudgement.Purpose.QUEUE).count(),
        "qualification": gold.filter(purpose=GoldJudgement.Purpose.QUALIFICATION).count(),
    }


def measure(dataset, campaign, method: str, name: str) -> dict:
    """Accuracy of the resolution, and the models re-scored with its label set."""
    from annotation.campaign_read.resolution import campaign_resolution, resolve_campaign
    from annotation.models import Pair
    from retrieval.label_sets.status import LabelStatus
    from retrieval.scoring.rescoring_service import rescore_dataset

    pending = Pair.objects.filter(campaign=campaign, status=Pair.Status.PENDING).count()
    resolution = campaign_resolution(campaign, method)
    truth = truth_of(dataset, resolution.caption_ids, resolution.video_ids)
    said = resolution.status == LabelStatus.RELEVANT
    decided = said | (resolution.status == LabelStatus.IRRELEVANT)
    right = decided & (said == truth)
    label_set = resolve_campaign(campaign, name=name, method=method)
    scored = rescore_dataset(dataset, label_set, run_names=list(DEMO_RUNS))
    models = {
        run: (means["C@1"], means["AP"], means["C@5"], means["C@10"])
        for run, means in scored.result.means("corrected").items()
    }
    return {
        "pairs": len(truth),
        "pending": pending,
        "accuracy": float(right.mean()),
        "relevant_accuracy": float(right[truth].mean()),
        "no_label": float((~decided).mean()),
        "models": models,
        "scored": scored,
    }


def true_scores(dataset, campaign, scored) -> dict[str, tuple[float, float]]:
    """C@1 and AP of each model with the true labels of the campaign's pooled pairs."""
    from annotation.models import Pair
    from retrieval.scoring.rescoring import Qrels, score

    rows = np.array(Pair.objects.filter(campaign=campaign).values_list("caption_id", "video_id"))
    truth = truth_of(dataset, rows[:, 0], rows[:, 1])
    row_of = {int(pk): i for i, pk in enumerate(scored.caption_ids.tolist())}
    qrow = np.array([row_of.get(int(c), -1) for c in rows[:, 0]], dtype=np.int64)
    keep = qrow >= 0
    qrels = Qrels(qrow[keep], rows[keep, 1].astype(np.int64), truth[keep].astype(np.int64))
    qrels = qrels.union(scored.original)
    result = {}
    for run, items in scored.runs.items():
        means = score(items, qrels).means
        result[run] = (means["C@1"], means["AP"], means["C@5"], means["C@10"])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--videos", type=int, default=1500)
    parser.add_argument("--annotators", type=int, default=20)
    parser.add_argument("--gold", type=int, default=200, help="Gold pairs (default 200).")
    parser.add_argument(
        "--spammer-seconds",
        type=float,
        help="Mean seconds per judgement of spammers (default: the profile's 0.8 s).",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--epochs", type=int, help="Training epochs of the demo models.")
    parser.add_argument(
        "--world",
        type=Path,
        help="Folder to keep the built demo world in and reuse on later runs (same --videos).",
    )
    parser.add_argument(
        "--only",
        nargs="+",
        choices=["reference", "A", "B", "D"],
        help="Judge only these configurations (B gives rows B and C); with --json, run "
        "several such processes side by side on copies of one --world and --merge them.",
    )
    parser.add_argument("--json", type=Path, help="Also write the figures here.")
    parser.add_argument("--merge", nargs="+", type=Path, help="Print the table of --json files.")
    args = parser.parse_args()
    if args.merge:
        merge(args)
        return
    began = time.perf_counter()
    load = os.getloadavg()
    reuse = args.world is not None and (args.world / "bench.sqlite3").exists()
    with temporary_django(template=args.world if reuse else None) as tmp:
        from django.core.management import call_command

        from retrieval.models import Dataset, Run

        if reuse:
            log(f"reusing the demo world in {args.world}")
        else:
            log(f"building a demo world of {args.videos} videos")
            extra = {"epochs": args.epochs} if args.epochs else {}
            call_command("demo", videos=args.videos, workers=2, verbosity=0, **extra)
            if args.world is not None:
                save_var(tmp, args.world)
        dataset = Dataset.objects.get(name="demo")
        runs = sorted(
            Run.objects.filter(dataset=dataset, name__in=DEMO_RUNS),
            key=lambda run: DEMO_RUNS.index(run.name),
        )
        configs = args.only or ["reference", "A", "B"]
        log(f"creating the campaigns: {', '.join(configs)}")
        campaigns = {
            name: make_campaign(
                dataset, runs, f"crowd-{name}", args.seed, gold=name in "BD", adaptive=name == "D"
            )
            for name in configs
        }
        gold_relevant = None
        for name in ("B", "D"):
            if name in campaigns:
                from annotation.gold.service import import_gold

                path, gold_relevant = gold_file(dataset, runs, args.gold, args.seed, Path(tmp))
                import_gold(campaigns[name], path)
        crowd = crowd_profiles(CROWD, args.spammer_seconds)
        clean = crowd_profiles(CLEAN, args.spammer_seconds)
        paused, took = {}, {}
        for name, campaign in campaigns.items():
            log(f"judging {name}")
            start = time.perf_counter()
            profiles = clean if name == "reference" else crowd
            paused[name] = judge(
                campaign, profiles, args.annotators, args.seed, requeue=name in "BD"
            )
            took[name] = time.perf_counter() - start
        log("resolving and re-scoring")
        rows = {
            "reference": ("reference", "majority"),
            "A": ("A", "majority"),
            "B": ("B", "majority"),
            "C": ("B", "dawid-skene"),
            "D": ("D", "majority"),  # an adaptive campaign's own resolution: its posteriors
        }
        figures = {
            row: measure(dataset, campaigns[config], method, f"crowd-{row}")
            for row, (config, method) in rows.items()
            if config in campaigns
        }
        first = next(iter(campaigns))
        truth_models = true_scores(dataset, campaigns[first], figures[first]["scored"])
        for f in figures.values():
            del f["scored"]
        costs = {config: spent(campaign) for config, campaign in campaigns.items()}
        failed = qualification_failed(campaigns["B"]) if "B" in campaigns else {}
    result = {
        "figures": figures,
        "truth_models": truth_models,
        "costs": costs,
        "paused": paused,
        "failed": failed,
        "gold_relevant": gold_relevant,
        "took": took,
        "load": load,
        "seconds": time.perf_counter() - began,
    }
    if args.json:
        args.json.write_text(json.dumps(result))
    if set(figures) == {"reference", "A", "B", "C"}:
        report(args, result)


def merge(args) -> None:
    """Print the table from the ``--json`` files of runs that each judged some configurations."""
    result: dict = {"figures": {}, "costs": {}, "paused": {}, "took": {}, "failed": {}}
    for path in args.merge:
        part = json.loads(path.read_text())
        for key in ("figures", "costs", "paused", "took"):
            result[key].update(part[key])
        result["failed"].update(part["failed"])
        result["truth_models"] = part["truth_models"]
        result["load"] = part["load"]
        if part["gold_relevant"] is not None:
            result["gold_relevant"] = part["gold_relevant"]
        result["seconds"] = max(result.get("seconds", 0), part["seconds"])
    report(args, result)


def kept_out(failed: dict[str, int], config: str) -> str:
    """Annotators never admitted, as spammers / careful / normal (B only)."""
    if config != "B":
        return "-"
    spam = sum(failed.get(s, 0) for s in SPAMMERS)
    return f"{spam} / {failed.get('careful', 0)} / {failed.get('normal', 0)}"


def report(args, result: dict) -> None:
    figures, truth_models, costs = result["figures"], result["truth_models"], result["costs"]
    paused, failed, took, load = result["paused"], result["failed"], result["took"], result["load"]
    gold_relevant = result["gold_relevant"]
    ref = figures["reference"]["accuracy"]
    print(f"Machine: {machine()}; load average at start {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    print(
        f"Demo world {args.videos} videos, {figures['A']['pairs']:,} pooled pairs "
        f"({', '.join(DEMO_RUNS)} @ {DEPTH}), {args.annotators} annotators, seed {args.seed}; "
        f"{args.gold} gold pairs ({gold_relevant:.0%} relevant); spammer seconds "
        f"{args.spammer_seconds or 'profile default (0.8)'}"
    )
    print()
    print(
        "| config | accuracy (target: within 1 pt of reference) | on relevant pairs | "
        "no label | labels spent: campaign (discounted) + gold + qualification = total | "
        "overhead (target <= 12%) | paused: spammers / careful / normal | "
        "kept out by qualification: spammers / careful / normal |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for row, config in (("reference", "reference"), ("A", "A"), ("B", "B"), ("C", "B")):
        f = figures[row]
        gap = f["accuracy"] - ref
        ok = "" if row == "reference" else (" ✓" if gap >= -TARGET_ACCURACY_GAP - 1e-9 else " ✗")
        c = costs[config]
        extra = c["gold"] + c["qualification"]
        overhead = extra / c["campaign"] if c["campaign"] else 0.0
        p = paused[config]
        spam = (
            sum(p.get(s, (0, 0))[0] for s in SPAMMERS),
            sum(p.get(s, (0, 0))[1] for s in SPAMMERS),
        )
        careful, normal = p.get("careful", (0, 0)), p.get("normal", (0, 0))
        over_ok = (
            "" if row in ("reference", "A") else (" ✓" if overhead <= TARGET_OVERHEAD else " ✗")
        )
        careful_ok = "" if row in ("reference", "A") else (" ✓" if careful[0] == 0 else " ✗")
        print(
            f"| {row} | {f['accuracy']:.2%} ({gap * 100:+.2f} pt){ok} | "
            f"{f['relevant_accuracy']:.2%} | {f['no_label']:.2%} | "
            f"{c['campaign']:,} ({c['discounted']:,}) + {c['gold']:,} + {c['qualification']:,} "
            f"= {c['campaign'] + extra:,} | {overhead:.1%}{over_ok} | "
            f"{spam[0]}/{spam[1]} / {careful[0]}/{careful[1]}{careful_ok} / "
            f"{normal[0]}/{normal[1]} | "
            f"{kept_out(failed, config)} |"
        )
    print()
    print(
        "| model | true labels C@1 / AP | "
        + " | ".join(
            f"{row} C@1 (target: within 1 pt) / AP" for row in ("reference", "A", "B", "C")
        )
        + " |"
    )
    print("|---|---|" + "---|" * 4)
    for run in DEMO_RUNS:
        t_c1, t_ap = truth_models[run][:2]
        cells = []
        for row in ("reference", "A", "B", "C"):
            c1, ap = figures[row]["models"][run][:2]
            gap = c1 - t_c1
            mark = " ✓" if abs(gap) <= TARGET_C1_GAP + 1e-9 else " ✗"
            cells.append(
                f"{c1:.2%} ({gap * 100:+.2f} pt){mark} / {ap:.2%} ({(ap - t_ap) * 100:+.2f})"
            )
        print(f"| {run} | {t_c1:.2%} / {t_ap:.2%} | " + " | ".join(cells) + " |")
    print()
    print(
        "Judging took "
        + ", ".join(f"{name} {seconds:.0f} s" for name, seconds in took.items())
        + f"; longest bench process {result['seconds']:.0f} s"
    )


if __name__ == "__main__":
    main()
