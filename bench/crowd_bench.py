"""Measured A/B/C crowd benchmark on the demo world's truth.

A demo world's four runs are pooled at depth 10 into one campaign per configuration, judged by
the same seeded simulated crowd (60% careful, 20% normal, 10% random spammers, 10% always "not
relevant") through the real assignment service under FIRE's policy: the reference (no
spammers); A, plain majority; B, qualification, 5% gold and automatic pausing (paused
annotators' labels discounted); C, B resolved by Dawid-Skene. Gold pairs come from ranks 11-20
with the world's true labels. Prints accuracy, C@1 and AP against the truth, labels spent
and annotators paused::

    nice -n 5 .venv/bin/python bench/crowd_bench.py [--videos 1500] [--annotators 20]
"""

import contextlib
import json
import os
import time
from collections import Counter
from pathlib import Path

import numpy as np
from harness import log, machine, parser, save_var, temporary_django

DEMO_RUNS = ("random", "minilm", "mme", "jpose")
DEPTH = 10
CROWD = "careful=0.6:0.02,normal=0.2:0.08,spammer=0.1:random,lazy=0.1:always-irrelevant"
CLEAN = "careful=0.8:0.02,normal=0.2:0.08"
SPAMMERS = ("spammer", "lazy")
TARGET_ACCURACY_GAP = 0.01
TARGET_C1_GAP = 0.01
TARGET_OVERHEAD = 0.12
MODEL_METRICS = ("C@1", "AP", "C@5", "C@10")
"""Each model's scores in the table's figures, in this order."""


def crowd_profiles(text: str, spammer_seconds: float | None):
    from dataclasses import replace

    from annotation.simulation.live import parse_profiles

    profiles = parse_profiles(text)
    if spammer_seconds is None:
        return profiles
    return tuple(replace(p, seconds=spammer_seconds) if p.name in SPAMMERS else p for p in profiles)


def gold_file(dataset, runs, n_gold: int, seed: int, folder: Path) -> tuple[Path, float]:
    """A JSONL gold file: ``n_gold`` pairs from the runs' ranks 11-20 that no run ranks in its
    top 10 (so never pooled), labelled with the truth; and their relevant share."""
    from annotation.simulation.replay_service import ground_truth
    from retrieval.models import Caption, Video
    from retrieval.search.runs_service import load_run

    pooled, deeper = set(), set()
    for lists in [load_run(run) for run in runs]:
        for q, items in zip(lists.query_ids.tolist(), lists.item_ids.tolist(), strict=True):
            pooled.update((q, v) for v in items[:DEPTH] if v >= 0)
            deeper.update((q, v) for v in items[DEPTH : 2 * DEPTH] if v >= 0)
    own = set(Caption.objects.filter(dataset=dataset).values_list("pk", "video_id"))
    candidates = sorted(deeper - pooled - own)
    rng = np.random.default_rng(seed + 7)
    chosen = [candidates[i] for i in rng.choice(len(candidates), n_gold, replace=False)]
    captions, videos = np.array(chosen, dtype=np.int64).reshape(-1, 2).T
    truth = ground_truth(dataset, captions, videos)[0]
    caption_key = dict(Caption.objects.filter(pk__in=captions.tolist()).values_list("pk", "key"))
    video_key = dict(Video.objects.filter(pk__in=videos.tolist()).values_list("pk", "key"))
    path = folder / "gold.jsonl"
    with path.open("w") as out:
        for c, v, relevant in zip(captions.tolist(), videos.tolist(), truth.tolist(), strict=True):
            label = "relevant" if relevant else "irrelevant"
            row = {"caption_key": caption_key[c], "video_key": video_key[v], "label": label}
            row["explanation"] = f"the demo world's truth: {label}"
            out.write(json.dumps(row) + "\n")
    return path, float(truth.mean())


def make_campaign(dataset, runs, name: str, seed: int, *, gold: bool, adaptive: bool = False):
    """A campaign of the four runs at depth 10; with ``gold``, B's settings, else A's; with
    ``adaptive``, D's: B's quality control under the adaptive policy (confidence 0.95, at
    most 5 labels) and the metric-first order."""
    from dataclasses import replace

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
    chosen, extra = CampaignSettings(gold=settings), {}
    if adaptive:
        chosen = replace(
            chosen,
            judging=JudgingSettings(strategy="metric-first"),
            label_policy=LabelPolicy(policy.ADAPTIVE, policy.DEFAULT_CONFIDENCE),
        )
        extra = {"second_label_rate": 0.0, "max_labels": policy.DEFAULT_ADAPTIVE_CAP}
    spec = CampaignSpec(name=name, depth=DEPTH, seed=seed, settings=chosen, **extra)
    return create_campaign(dataset, runs, spec)


def paused_by_profile(campaign) -> dict[str, tuple[int, int]]:
    """Profile name -> (annotators paused, annotators who judged or trained here)."""
    from annotation.models import AnnotatorStanding, GoldJudgement, Judgement

    def names(rows) -> set[str]:
        return set(rows.values_list("annotator__username", flat=True))

    paused = names(AnnotatorStanding.objects.filter(campaign=campaign, paused_at__isnull=False))
    active = names(Judgement.objects.filter(pair__campaign=campaign)) | names(
        GoldJudgement.objects.filter(gold_pair__campaign=campaign)
    )
    every = Counter(name.split("-")[1] for name in active)  # sim-<profile>-<n>
    stopped = Counter(name.split("-")[1] for name in active & paused)
    return {profile: (stopped[profile], every[profile]) for profile in sorted(every)}


def qualification_failed(campaign) -> dict[str, int]:
    """Profile name -> annotators who trained and were never admitted."""
    from annotation.models import QualificationAttempt

    tried: dict[str, bool] = {}
    for name, passed, admin in QualificationAttempt.objects.filter(campaign=campaign).values_list(
        "annotator__username", "passed", "admitted_by"
    ):
        tried[name] = tried.get(name, False) or bool(passed) or admin is not None
    return dict(Counter(name.split("-")[1] for name, ok in tried.items() if not ok))


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
    from annotation.simulation.replay_service import ground_truth
    from retrieval.label_sets.status import LabelStatus
    from retrieval.scoring.rescoring_service import rescore_dataset

    pending = Pair.objects.filter(campaign=campaign, status=Pair.Status.PENDING).count()
    resolution = campaign_resolution(campaign, method)
    truth = ground_truth(dataset, resolution.caption_ids, resolution.video_ids)[0]
    said = resolution.status == LabelStatus.RELEVANT
    decided = said | (resolution.status == LabelStatus.IRRELEVANT)
    right = decided & (said == truth)
    label_set = resolve_campaign(campaign, name=name, method=method)
    scored = rescore_dataset(dataset, label_set, run_names=list(DEMO_RUNS))
    return {
        "pairs": len(truth),
        "pending": pending,
        "accuracy": float(right.mean()),
        "relevant_accuracy": float(right[truth].mean()),
        "no_label": float((~decided).mean()),
        "models": model_figures(scored.result.means("corrected")),
        "scored": scored,
    }


def model_figures(means: dict[str, dict[str, float]]) -> dict[str, tuple[float, ...]]:
    """Each run's :data:`MODEL_METRICS`, from its means by metric."""
    return {run: tuple(found[name] for name in MODEL_METRICS) for run, found in means.items()}


def true_scores(dataset, campaign, scored) -> dict:
    """Each model's metrics by name with the true labels of the campaign's pooled pairs."""
    from annotation.models import Pair
    from annotation.simulation.replay_service import ground_truth
    from retrieval.scoring.rescoring import Qrels, score

    rows = np.array(Pair.objects.filter(campaign=campaign).values_list("caption_id", "video_id"))
    truth = ground_truth(dataset, rows[:, 0], rows[:, 1])[0]
    row_of = {int(pk): i for i, pk in enumerate(scored.caption_ids.tolist())}
    qrow = np.array([row_of.get(int(c), -1) for c in rows[:, 0]], dtype=np.int64)
    keep = qrow >= 0
    qrels = Qrels(qrow[keep], rows[keep, 1].astype(np.int64), truth[keep].astype(np.int64))
    qrels = qrels.union(scored.original)
    return {run: score(items, qrels).means for run, items in scored.runs.items()}


def main() -> None:
    options = parser(__doc__)
    options.add_argument("--videos", type=int, default=1500)
    options.add_argument("--annotators", type=int, default=20)
    options.add_argument("--gold", type=int, default=200, help="Gold pairs (default 200).")
    options.add_argument(
        "--spammer-seconds",
        type=float,
        help="Mean seconds per judgement of spammers (default: the profile's 0.8 s).",
    )
    options.add_argument("--seed", type=int, default=0)
    options.add_argument("--epochs", type=int, help="Training epochs of the demo models.")
    options.add_argument(
        "--world",
        type=Path,
        help="Folder to keep the built demo world in and reuse on later runs (same --videos).",
    )
    options.add_argument(
        "--only",
        nargs="+",
        choices=["reference", "A", "B", "D", "E"],
        help="Judge only these configurations (B gives rows B and C); with --json, run "
        "several such processes side by side on copies of one --world and --merge them.",
    )
    options.add_argument("--json", type=Path, help="Also write the figures here.")
    options.add_argument("--merge", nargs="+", type=Path, help="Print the table of --json files.")
    args = options.parse_args()
    if args.merge:
        merge(args)
        return
    began = time.perf_counter()
    load = os.getloadavg()
    with demo_world(args.videos, args.world, args.epochs) as (tmp, dataset, runs):
        campaigns, gold_relevant = make_campaigns(dataset, runs, args, tmp)
        paused, took = judge_all(campaigns, args)
        log("resolving and re-scoring")
        figures = {
            row: measure(dataset, campaigns[config], method, f"crowd-{row}")
            for row, (config, method) in ROWS.items()
            if config in campaigns
        }
        first = next(iter(campaigns))
        truth_all = true_scores(dataset, campaigns[first], figures[first]["scored"])
        if "E" in figures:
            figures["E"]["intervals"] = {
                run: {m: [i.value, i.low, i.high, list(i.parts)] for m, i in found.items()}
                for run, found in figures["E"]["scored"].result.intervals.items()
            }
            figures["E"]["calibration"] = calibration(dataset, campaigns["E"])
        for f in figures.values():
            del f["scored"]
        costs = {config: spent(campaign) for config, campaign in campaigns.items()}
        failed = qualification_failed(campaigns["B"]) if "B" in campaigns else {}
    result = {
        "figures": figures,
        "truth_models": model_figures(truth_all),
        "truth_all": truth_all,
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
    if "E" in figures:
        report_active(args, result)


ROWS = {
    "reference": ("reference", "majority"),
    "A": ("A", "majority"),
    "B": ("B", "majority"),
    "C": ("B", "dawid-skene"),
    "D": ("D", "majority"),  # an adaptive campaign's own resolution: its posteriors
    "E": ("E", "majority"),  # D plus the active stages: their estimates ride with the set
}
"""Each table row: the campaign it resolves and how."""


@contextlib.contextmanager
def demo_world(videos: int, keep: Path | None, epochs: int | None = None):
    """Django on a throw-away database holding the demo dataset of ``videos`` clips (built
    and saved in ``keep``, or reused from it); yields (the temporary folder, the dataset, its
    four runs)."""
    reuse = keep is not None and (keep / "bench.sqlite3").exists()
    with temporary_django(template=keep if reuse else None) as tmp:
        from django.core.management import call_command

        from retrieval.models import Dataset, Run

        if reuse:
            log(f"reusing the demo world in {keep}")
        else:
            log(f"building a demo world of {videos} videos")
            extra = {"epochs": epochs} if epochs else {}
            call_command("demo", videos=videos, workers=2, verbosity=0, **extra)
            if keep is not None:
                save_var(tmp, keep)
        dataset = Dataset.objects.get(name="demo")
        runs = Run.objects.filter(dataset=dataset, name__in=DEMO_RUNS)
        yield tmp, dataset, sorted(runs, key=lambda run: DEMO_RUNS.index(run.name))


def make_campaigns(dataset, runs, args, folder: Path):
    """Every configuration's campaign, made before any is judged; the gold file imported
    into those with gold, and its relevant share."""
    from annotation.gold.service import import_gold

    configs = args.only or ["reference", "A", "B"]
    log(f"creating the campaigns: {', '.join(configs)}")
    campaigns = {
        name: make_campaign(
            dataset, runs, f"crowd-{name}", args.seed, gold=name in "BDE", adaptive=name in "DE"
        )
        for name in configs
    }
    gold_relevant = None
    for name in ("B", "D", "E"):
        if name in campaigns:
            path, gold_relevant = gold_file(dataset, runs, args.gold, args.seed, folder)
            import_gold(campaigns[name], path)
    return campaigns, gold_relevant


def judge_all(campaigns, args):
    """Each campaign judged by its crowd: who was paused, and how long it took."""
    from annotation.simulation.live import judge_until_settled

    crowd = crowd_profiles(CROWD, args.spammer_seconds)
    clean = crowd_profiles(CLEAN, args.spammer_seconds)
    paused, took = {}, {}
    for name, campaign in campaigns.items():
        log(f"judging {name}")
        start = time.perf_counter()
        profiles = clean if name == "reference" else crowd
        judge_until_settled(
            campaign, profiles, args.annotators, args.seed, requeue=name in "BDE", say=log
        )
        if name == "E":
            active_stages_judged(campaign, profiles, args)
        paused[name] = paused_by_profile(campaign)
        took[name] = time.perf_counter() - start
    return paused, took


def active_stages_judged(campaign, profiles, args, most: int = 8) -> None:
    """E: after D's adaptive labels, the admin's loop of the active policy: fit the relevance
    predictor, estimate the last stage and draw the next, let the crowd judge the drawn
    queries in full; until every settled score is within the half-width or no stage can be
    drawn."""
    from annotation.active import stages
    from annotation.active.live import ActiveError
    from annotation.prediction.service import fit_predictor
    from annotation.simulation.live import judge_until_settled

    for number in range(most):
        fitted = fit_predictor(campaign, seed=args.seed)
        log(f"  E: predictor fitted on {fitted.labelled:,} labelled pairs ({fitted.method})")
        try:
            drawn = stages.draw_stage(campaign)
        except ActiveError as exc:
            if "being judged" not in str(exc) and "meanwhile" not in str(exc):
                log(f"  E: no stage {number + 1}: {exc}")
                break
            # the background predictor fit drew it (it carries the stages on): judge it
            log(f"  E: the background fit drew the next stage: {exc}")
            drawn = None
        else:
            log(
                f"  E: stage {drawn.stage}: {drawn.drawn} of {drawn.queries} queries drawn, "
                f"{drawn.pairs} pairs served, about {drawn.expected_labels:.0f} labels expected"
            )
        seed = args.seed + 100 * (number + 1)
        judge_until_settled(campaign, profiles, args.annotators, seed, requeue=True, say=log)
        if drawn is None:
            continue
        stage = stages.estimate_stage(campaign)
        if stage is not None and stage.estimates is not None:
            settled = [
                v
                for scores in stage.estimates.values()
                for m, v in scores.items()
                if m in campaign.settings.settle
            ]
            widest = max((v["high"] - v["low"]) * 50 for v in settled)
            noise = max(1.96 * v["labels_variance"] ** 0.5 * 100 for v in settled)
            log(
                f"  E: stage {stage.number} estimated, widest settled half-width {widest:.2f} "
                f"(label noise alone at most {noise:.2f})"
            )


def calibration(dataset, campaign) -> dict:
    """E: how well the label model's posteriors on the pairs of the queries judged in full
    match the truth: the resolved labels' errors beside the number the posteriors expect
    (sum of min(p, 1 - p)), on all those pairs and on those at 99.5% or surer; and per run,
    the net count of judged queries whose C@1 the resolved labels get wrong (resolved minus
    true) beside the posteriors' expectation of it (resolved minus posterior)."""
    from annotation.active import stages
    from annotation.active.live import live_campaign
    from annotation.models import ActiveStage, Pair
    from annotation.simulation.estimates import query_metrics
    from annotation.simulation.replay_service import ground_truth

    live = live_campaign(campaign)
    last = ActiveStage.objects.filter(campaign=campaign).order_by("-number").first()
    if last is None:
        return {}
    judged = stages.StageArrays.of(last).judged
    rows = Pair.objects.filter(campaign=campaign).values_list("id", "caption_id", "video_id")
    where = {pk: (c, v) for pk, c, v in rows}
    keys = np.array([where[int(pk)] for pk in live.pair_ids.tolist()], dtype=np.int64)
    truth = ground_truth(dataset, keys[:, 0], keys[:, 1])[0].astype(bool)
    p, resolved = live.posterior, live.resolved.astype(bool)
    inside = judged[live.world.layout.query_of] & live.labelled
    sure = inside & (np.maximum(p, 1 - p) >= 0.995)
    rows = np.flatnonzero(judged)
    c1 = {
        name: query_metrics(live.world, values, rows)["C@1"]
        for name, values in (
            ("true", truth.astype(np.float64)),
            ("resolved", resolved.astype(np.float64)),
            ("posterior", p),
        )
    }
    return {
        "pairs": int(inside.sum()),
        "errors": int((resolved != truth)[inside].sum()),
        "expected": float(np.minimum(p, 1 - p)[inside].sum()),
        "sure_pairs": int(sure.sum()),
        "sure_errors": int((resolved != truth)[sure].sum()),
        "sure_expected": float(np.minimum(p, 1 - p)[sure].sum()),
        "c1_net": {
            run: [
                float((c1["resolved"][:, r] - c1["true"][:, r]).sum()),
                float((c1["resolved"][:, r] - c1["posterior"][:, r]).sum()),
            ]
            for r, run in enumerate(live.world.run_names)
        },
    }


def merge(args) -> None:
    """Print the table from the ``--json`` files of runs that each judged some configurations."""
    result: dict = {"figures": {}, "costs": {}, "paused": {}, "took": {}, "failed": {}}
    for path in args.merge:
        part = json.loads(path.read_text())
        for key in ("figures", "costs", "paused", "took", "failed"):
            result[key].update(part[key])
        result["truth_models"] = part["truth_models"]
        result["truth_all"] = part.get("truth_all")
        result["load"] = part["load"]
        if part["gold_relevant"] is not None:
            result["gold_relevant"] = part["gold_relevant"]
        result["seconds"] = max(result.get("seconds", 0), part["seconds"])
    if {"reference", "A", "B", "C"} <= set(result["figures"]):
        report(args, result)
    if "E" in result["figures"]:
        report_active(args, result)


ACTIVE_METRICS = ("C@1", "C@5", "C@10", "AP", "nDCG@10")
FIRE_LABELS = 19_437
"""FIRE's policy's labels on this world, crowd and seed (config B: campaign, gold and
qualification; ``bench/RESULTS.md``, 1,500 videos, seed 0): the anchor of E's share."""


def report_active(args, result: dict) -> None:
    """E: labels against FIRE's and every score's active estimate against the truth."""
    costs, e = result["costs"]["E"], result["figures"]["E"]
    total = costs["campaign"] + costs["gold"] + costs["qualification"]
    fire = sum(result["costs"]["B"][k] for k in ("campaign", "gold", "qualification")) if (
        "B" in result["costs"]) else FIRE_LABELS  # fmt: skip
    print(f"Machine: {machine()}")
    print(
        f"E, active stages live: {costs['campaign']:,} ({costs['discounted']:,}) + "
        f"{costs['gold']:,} + {costs['qualification']:,} = {total:,} labels, "
        f"{total / fire:.1%} of FIRE's {fire:,}"
    )
    found = e.get("calibration") or {}
    if found:
        print(
            f"Posteriors on the judged queries' {found['pairs']:,} labelled pairs: "
            f"{found['errors']} resolved wrong, {found['expected']:.1f} expected; at 99.5% or "
            f"surer ({found['sure_pairs']:,}): {found['sure_errors']} wrong, "
            f"{found['sure_expected']:.1f} expected"
        )
        print(
            "Net C@1 queries resolved wrong (resolved - true | resolved - posterior): "
            + ", ".join(f"{run} {a:+.0f} | {b:+.1f}" for run, (a, b) in found["c1_net"].items())
        )
    print()
    print("| model | metric | true | estimate [95% interval] | error (target: within 1 pt) "
          "| covered | interval from |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    for run in DEMO_RUNS:
        for metric in ACTIVE_METRICS:
            true = result["truth_all"][run][metric]
            value, low, high, parts = e["intervals"][run][metric]
            error = (value - true) * 100
            print(
                f"| {run} | {metric} | {true * 100:.1f} | {value * 100:.1f} "
                f"[{low * 100:.1f}–{high * 100:.1f}] | {error:+.2f}"
                f"{tick(abs(error) <= 1 + 1e-9)} | "
                f"{'yes' if low - 1e-12 <= true <= high + 1e-12 else 'no'} | "
                f"{', '.join(parts) or 'exact'} |"
            )


def tick(met: bool) -> str:
    """A target's mark in the tables."""
    return " ✓" if met else " ✗"


def report(args, result: dict) -> None:
    """A/B/C: each configuration's accuracy, labels spent and annotators paused or kept out,
    then each model's C@1 and AP against the true labels'."""
    figures, costs, paused = result["figures"], result["costs"], result["paused"]
    ref, load, failed = figures["reference"]["accuracy"], result["load"], result["failed"]
    print(f"Machine: {machine()}; load average at start {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    print(
        f"Demo world {args.videos} videos, {figures['A']['pairs']:,} pooled pairs "
        f"({', '.join(DEMO_RUNS)} @ {DEPTH}), {args.annotators} annotators, seed {args.seed}; "
        f"{args.gold} gold pairs ({result['gold_relevant']:.0%} relevant); spammer seconds "
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
    spammers_out = sum(failed.get(s, 0) for s in SPAMMERS)  # by qualification, in B
    kept_out = f"{spammers_out} / {failed.get('careful', 0)} / {failed.get('normal', 0)}"
    for row in ("reference", "A", "B", "C"):
        config = ROWS[row][0]
        f, c, p = figures[row], costs[config], paused[config]
        gap = f["accuracy"] - ref
        ok = "" if row == "reference" else tick(gap >= -TARGET_ACCURACY_GAP - 1e-9)
        extra = c["gold"] + c["qualification"]
        overhead = extra / c["campaign"] if c["campaign"] else 0.0
        spam = [sum(p.get(s, (0, 0))[i] for s in SPAMMERS) for i in (0, 1)]
        careful, normal = p.get("careful", (0, 0)), p.get("normal", (0, 0))
        checked = row in ("B", "C")  # the targets of quality control
        over_ok = tick(overhead <= TARGET_OVERHEAD) if checked else ""
        careful_ok = tick(careful[0] == 0) if checked else ""
        print(
            f"| {row} | {f['accuracy']:.2%} ({gap * 100:+.2f} pt){ok} | "
            f"{f['relevant_accuracy']:.2%} | {f['no_label']:.2%} | "
            f"{c['campaign']:,} ({c['discounted']:,}) + {c['gold']:,} + {c['qualification']:,} "
            f"= {c['campaign'] + extra:,} | {overhead:.1%}{over_ok} | "
            f"{spam[0]}/{spam[1]} / {careful[0]}/{careful[1]}{careful_ok} / "
            f"{normal[0]}/{normal[1]} | "
            f"{kept_out if config == 'B' else '-'} |"
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
        t_c1, t_ap = result["truth_models"][run][:2]
        cells = []
        for row in ("reference", "A", "B", "C"):
            c1, ap = figures[row]["models"][run][:2]
            gap = c1 - t_c1
            mark = tick(abs(gap) <= TARGET_C1_GAP + 1e-9)
            cells.append(
                f"{c1:.2%} ({gap * 100:+.2f} pt){mark} / {ap:.2%} ({(ap - t_ap) * 100:+.2f})"
            )
        print(f"| {run} | {t_c1:.2%} / {t_ap:.2%} | " + " | ".join(cells) + " |")
    print()
    print(
        "Judging took "
        + ", ".join(f"{name} {seconds:.0f} s" for name, seconds in result["took"].items())
        + f"; longest bench process {result['seconds']:.0f} s"
    )


if __name__ == "__main__":
    main()
