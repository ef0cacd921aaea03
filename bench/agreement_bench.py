"""Time the full agreement report of a FIRE-scale campaign (660,000 labels, 555,000 pairs).

The campaign (FIRE §3.1's label counts with extra labels as in Fig. 7, ~5% disagreement, some
undone judgements) is built untimed by ``bench/world.py`` in a throw-away SQLite database;
then :func:`annotation.campaign_read.reporting.campaign_report` is timed beside the
``krippendorff`` package alone on the same value counts::

    .venv/bin/python bench/agreement_bench.py [--labels 660000] [--pairs 555000] [--repeats 3]
"""

import statistics

import numpy as np
import world
from harness import database_name, machine, once, parser, temporary_django, timed

TARGET_SECONDS = 2.0
ANCHOR_SECONDS = 0.09  # the krippendorff package alone on FIRE-MSVD-sized value counts
FLIP = 0.0256
"""Each label flips the pair's truth with this probability, so two labels disagree about
2p(1-p) of the time: ~5% disagreement."""


def build(args):
    """The campaign and its judgements, written by the world builder (untimed)."""
    from annotation.campaigns.pooling import Pool
    from annotation.models import Campaign, Judgement
    from retrieval.models import Dataset

    rng = np.random.default_rng(args.seed)
    per_caption = 10
    n_captions = -(-args.pairs // per_caption)
    media = world.media(
        Dataset.objects.create(name="bench"), args.videos, np.arange(n_captions) % args.videos
    )
    captions = np.repeat(media.caption_pks, per_caption)[: args.pairs]
    query = np.repeat(np.arange(n_captions), per_caption)[: args.pairs]
    offsets = np.tile(np.arange(1, per_caption + 1), n_captions)[: args.pairs]
    videos = media.video_pks[(query + offsets) % args.videos]
    user_pks = world.annotators([f"annotator{i:02d}" for i in range(args.annotators)], role=False)
    truth = rng.random(args.pairs) < 0.08
    double = np.zeros(args.pairs, dtype=bool)
    double[rng.permutation(args.pairs)[: args.pairs // 10]] = True
    plan = world.label_plan(truth, double, args.labels, np.full(args.annotators, FLIP), rng)
    if len(plan.pair) > args.labels:
        raise SystemExit("--labels must be at least 1.11x --pairs")
    campaign = Campaign.objects.create(dataset=media.dataset, name="bench", max_labels=3)
    pool = Pool(captions, videos, np.zeros((args.pairs, 1), dtype=np.int16))
    pair_pks = world.pairs(campaign, pool, double)
    world.judgements(plan, pair_pks, user_pks, rng)
    # An admin settled half of the ties (pairs with 4 labels split 2-2): the rest stay
    # disagreements, as in FIRE Table 2.
    per_pair = np.bincount(plan.pair, minlength=args.pairs)
    relevant = np.bincount(plan.pair, weights=plan.relevant, minlength=args.pairs)
    tied = np.flatnonzero(2 * relevant == per_pair)
    campaign.pairs.filter(pk__in=pair_pks[tied[: len(tied) // 2]].tolist()).update(
        adjudicated=Judgement.Label.RELEVANT
    )
    return campaign


def main() -> None:
    options = parser(__doc__, database=True, seed=True)
    options.add_argument("--labels", type=int, default=660_000)
    options.add_argument("--pairs", type=int, default=555_000)
    options.add_argument("--annotators", type=int, default=40)
    options.add_argument("--videos", type=int, default=30_000)
    options.add_argument("--resamples", type=int, default=1000)
    options.add_argument("--repeats", type=int, default=3)
    args = options.parse_args()
    with temporary_django(args.database_url):
        import krippendorff

        from annotation.campaign_read import agreement, reporting
        from annotation.campaign_read import labels as campaign_labels

        setup, campaign = once(lambda: build(args))

        report_times, report = timed(
            lambda: reporting.campaign_report(campaign, resamples=args.resamples), args.repeats
        )
        report = report.to_json()  # the flat form the agreement command prints
        load_times, data = timed(
            lambda: campaign_labels.load_campaign_labels(campaign), args.repeats
        )
        counts = agreement.value_counts(data.pair_index, data.labels, data.n_pairs)
        multi = agreement.multiply_labelled(counts)
        package_times, package_alpha = timed(
            lambda: krippendorff.alpha(value_counts=counts, level_of_measurement="nominal"),
            args.repeats,
        )
        multi_times, _ = timed(
            lambda: krippendorff.alpha(value_counts=multi, level_of_measurement="nominal"),
            args.repeats,
        )

        print(f"machine: {machine()}; database: {database_name()}")
        print(
            f"data: {report['labels']:,} live labels over {report['pairs']:,} pairs "
            f"(pool {report['pool_pairs']:,}), {len(report['annotators'])} annotators, "
            f"{report['multiply_labelled_pairs']:,} pairs with 2+ labels; setup {setup:.1f} s"
        )
        low, high = report["intervals"]["krippendorff_alpha"]
        print(
            f"figures: percent agreement {report['percent_agreement']:.4f}, "
            f"alpha {report['krippendorff_alpha']:.4f} [{low:.4f}, {high:.4f}] "
            f"(package: {float(package_alpha):.4f}), "
            f"resolved {report['status']['resolved_share']:.5f} of complete pairs "
            f"({report['status']['disagreement']:,} disagreements)"
        )
        print(
            f"campaign_report ({args.resamples} resamples): best {min(report_times):.3f} s, "
            f"median {statistics.median(report_times):.3f} s; target <= {TARGET_SECONDS:.0f} s"
        )
        print(
            f"  of which load_campaign_labels: best {min(load_times):.3f} s, "
            f"median {statistics.median(load_times):.3f} s"
        )
        print(
            f"krippendorff package alone, same value counts ({len(counts):,} x 2): best "
            f"{min(package_times):.3f} s, median {statistics.median(package_times):.3f} s; "
            f"anchor: package alone ~ {ANCHOR_SECONDS} s"
        )
        print(
            f"  package on the {len(multi):,} multiply-labelled rows only (what the report "
            f"feeds it): best {min(multi_times):.3f} s"
        )


if __name__ == "__main__":
    main()
