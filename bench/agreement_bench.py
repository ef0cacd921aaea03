"""Time the full agreement report of a FIRE-scale campaign (660,000 labels, 555,000 pairs).

Builds, in a throw-away SQLite database, a campaign of ``--pairs`` pairs judged by
``--annotators`` annotators (FIRE §3.1: one label per pair, a second for 10%, a third where
two disagree, plus extra labels on some pairs as in FIRE's MSVD collection, Fig. 7), with
about 5% pairwise disagreement, some undone judgements (not live) and missing times. Setup is
not timed. Then times :func:`annotation.campaign_read.reporting.campaign_report` (load from the database,
resolve, agreement, alpha, bootstrap CIs, per-annotator figures) and, in the same run, the
``krippendorff`` package alone on the same value counts::

    .venv/bin/python bench/agreement_bench.py [--labels 660000] [--pairs 555000] [--repeats 3]
"""

import argparse
import statistics
import time
import uuid

import numpy as np
from harness import machine, temporary_django

TARGET_SECONDS = 2.0
ANCHOR_SECONDS = 0.09  # the krippendorff package alone on FIRE-MSVD-sized value counts


MAX_LABELS = 6


def label_counts(
    n_pairs: int, n_labels: int, votes: np.ndarray, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Labels per pair: 1, 2 for a 10% sample, 3 where those two disagree (FIRE §3.1), and
    2-5 extra labels on single-labelled pairs (MSVD's duplicates) up to ``n_labels`` in all.

    ``votes[p, i]`` is the ``i``-th label pair ``p`` would get. Returns the counts and the
    second-label sample mask.
    """
    per_pair = np.ones(n_pairs, dtype=np.int64)
    double = rng.permutation(n_pairs)[: n_pairs // 10]
    per_pair[double] = 2
    per_pair[double[votes[double, 0] != votes[double, 1]]] = 3
    spare = n_labels - int(per_pair.sum())
    if spare < 0:
        raise SystemExit("--labels must be at least 1.11x --pairs")
    singles = np.flatnonzero(per_pair == 1)
    rng.shuffle(singles)
    extra = rng.integers(2, MAX_LABELS, len(singles))
    used = int(np.searchsorted(np.cumsum(extra), spare))
    extra = extra[: used + 1]
    extra[-1] -= int(extra.sum()) - spare
    per_pair[singles[: len(extra)]] += extra
    sample = np.zeros(n_pairs, dtype=bool)
    sample[double] = True
    return per_pair, sample


def build(args: argparse.Namespace):
    """The campaign and its judgements, written with bulk inserts (untimed)."""
    from django.contrib.auth import get_user_model
    from django.contrib.auth.hashers import make_password
    from django.db import connection, transaction

    from annotation.campaigns.pooling import Pool
    from annotation.campaigns.service import write_pairs
    from annotation.models import Campaign, Judgement
    from retrieval.models import Caption, Dataset, Video

    rng = np.random.default_rng(args.seed)
    per_caption = 10
    n_captions = -(-args.pairs // per_caption)
    dataset = Dataset.objects.create(name="bench")
    Video.objects.bulk_create(
        (Video(dataset=dataset, key=f"v{i}", split="test") for i in range(args.videos)),
        batch_size=5000,
    )
    video_pks = np.array(Video.objects.order_by("pk").values_list("pk", flat=True))
    Caption.objects.bulk_create(
        (
            Caption(
                dataset=dataset,
                key=f"c{i}",
                text="x",
                video_id=int(video_pks[i % args.videos]),
                split="test",
                is_query=True,
            )
            for i in range(n_captions)
        ),
        batch_size=5000,
    )
    caption_pks = np.array(Caption.objects.order_by("pk").values_list("pk", flat=True))
    captions = np.repeat(caption_pks, per_caption)[: args.pairs]
    offsets = np.tile(np.arange(1, per_caption + 1), n_captions)[: args.pairs]
    videos = video_pks[
        (np.repeat(np.arange(n_captions), per_caption)[: args.pairs] + offsets) % args.videos
    ]
    User = get_user_model()
    password = make_password(None)
    users = User.objects.bulk_create(
        [User(username=f"annotator{i:02d}", password=password) for i in range(args.annotators)]
    )
    user_pks = np.array([user.pk for user in users])

    # Each label flips the pair's truth with probability p, so two labels disagree about
    # 2p(1-p) of the time: p = 0.0256 gives ~5% disagreement.
    truth = rng.random(args.pairs) < 0.08
    votes = truth[:, None] ^ (rng.random((args.pairs, MAX_LABELS)) < 0.0256)
    per_pair, sample = label_counts(args.pairs, args.labels, votes, rng)
    with transaction.atomic():
        campaign = Campaign.objects.create(dataset=dataset, name="bench", max_labels=3)
        pool = Pool(captions, videos, np.zeros((args.pairs, 1), dtype=np.int16))
        write_pairs(campaign, pool, sample)
    pair_pks = np.array(campaign.pairs.order_by("pk").values_list("pk", flat=True))

    pair_of_label = np.repeat(np.arange(args.pairs), per_pair)
    slot = np.arange(len(pair_of_label)) - np.repeat(np.cumsum(per_pair) - per_pair, per_pair)
    labels = votes[pair_of_label, slot]
    start = rng.integers(0, args.annotators, args.pairs)
    step = rng.integers(1, args.annotators // 6 + 1, args.pairs)
    annotator = (start[pair_of_label] + slot * step[pair_of_label]) % args.annotators
    seconds = rng.lognormal(np.log(5.0), 0.6, len(pair_of_label)).round(2)
    missing = rng.random(len(pair_of_label)) < 0.005
    undone = rng.random(len(pair_of_label)) < 0.01  # each undone one gets a live replacement

    def rows():
        for i, (p, a, lab, sec, gone, drop) in enumerate(
            zip(
                pair_pks[pair_of_label].tolist(),
                user_pks[annotator].tolist(),
                labels.tolist(),
                seconds.tolist(),
                missing.tolist(),
                undone.tolist(),
                strict=True,
            )
        ):
            label = "relevant" if lab else "irrelevant"
            stamp = f"2024-01-01 00:00:{i % 60:02d}"
            if drop:
                flipped = "irrelevant" if lab else "relevant"
                yield (uuid.uuid4().hex, p, a, flipped, sec, stamp, stamp)
            yield (uuid.uuid4().hex, p, a, label, None if gone else sec, stamp, None)

    columns = ("uuid", "pair_id", "annotator_id", "label", "seconds", "created_at", "undone_at")
    quote = connection.ops.quote_name
    table = f"{quote(Judgement._meta.db_table)} ({', '.join(map(quote, columns))})"
    with transaction.atomic():
        connection.ensure_connection()
        if connection.vendor == "sqlite":
            sql = f"INSERT INTO {table} VALUES ({', '.join('?' * len(columns))})"
            connection.connection.executemany(sql, rows())
        else:  # PostgreSQL: COPY through psycopg
            with (
                connection.connection.cursor() as cursor,
                cursor.copy(f"COPY {table} FROM STDIN") as copy,
            ):
                for row in rows():
                    copy.write_row(row)
    # An admin settled half of the ties (pairs with 4 labels split 2-2): the rest stay
    # disagreements, as in FIRE Table 2.
    relevant = np.bincount(pair_of_label, weights=labels, minlength=args.pairs)
    tied = np.flatnonzero(2 * relevant == per_pair)
    adjudicate = tied[: len(tied) // 2]
    campaign.pairs.filter(pk__in=pair_pks[adjudicate].tolist()).update(
        adjudicated=Judgement.Label.RELEVANT
    )
    return campaign


def timed(work, repeats: int) -> tuple[list[float], object]:
    times, result = [], None
    for _ in range(repeats):
        began = time.perf_counter()
        result = work()
        times.append(time.perf_counter() - began)
    return times, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--labels", type=int, default=660_000)
    parser.add_argument("--pairs", type=int, default=555_000)
    parser.add_argument("--annotators", type=int, default=40)
    parser.add_argument("--videos", type=int, default=30_000)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--database-url", help="Run on this (empty, throw-away) database instead of SQLite."
    )
    args = parser.parse_args()
    with temporary_django(args.database_url):
        import krippendorff

        from annotation.campaign_read import agreement, reporting
        from annotation.campaign_read import labels as campaign_labels

        began = time.perf_counter()
        campaign = build(args)
        setup = time.perf_counter() - began

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

        from django.db import connection

        print(f"machine: {machine()}; database: {connection.vendor}")
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
