"""Replay a whole campaign offline on a dataset whose true relevance is known, under a policy and
beside FIRE's policy on the same simulated crowd."""

from annotation.campaigns.settings import DEFAULT_HALF_WIDTH, DEFAULT_SETTLE
from annotation.simulation.campaign import POLICIES
from annotation.simulation.campaign_service import (
    ANNOTATORS,
    PROXIES,
    SimulationSpec,
    simulate_campaign,
)
from annotation.simulation.estimates import METRICS
from annotation.simulation.offline import CROWD_SPEC_HELP, QUALITY_BENCH_CROWD
from jobs.commands import BaseCommand
from retrieval.datasets.lookup import get_dataset
from retrieval.forms import split_names


def _names(text: str, known: tuple[str, ...]) -> tuple[str, ...]:
    """Comma-separated names matched to ``known`` in any case (unknown ones kept as given)."""
    by_lower = {name.lower(): name for name in known}
    return tuple(by_lower.get(part.lower(), part) for part in split_names(text))


class Command(BaseCommand):
    help = (
        "Replay a whole campaign offline on a dataset whose true relevance is known (a demo "
        "world): its runs pooled at --depth, qualification and gold tasks included, judged by a "
        "simulated crowd under --policy (fire: FIRE's protocol; adaptive: labels while a pair's "
        "posterior is unsure, metric-first; active: value-driven labels, then queries drawn with "
        "known probabilities and judged in full, every score an active-inference estimate). "
        "Prints per run and metric the true value, the estimate and its 95% interval (points), "
        "and the labels spent (campaign, gold, qualification) beside FIRE's policy on the same "
        "crowd, as means over the seeds with each seed beside them."
    )

    def add_arguments(self, parser):
        parser.add_argument("--dataset", required=True, help="A dataset with a ground truth.")
        parser.add_argument("--runs", default="", help="Comma-separated run names (all).")
        parser.add_argument("--policy", choices=POLICIES, required=True)
        parser.add_argument(
            "--settle",
            default=",".join(DEFAULT_SETTLE),
            help=f"Scores the active policy settles: any of {', '.join(METRICS)} (any case). "
            f"Default: {','.join(DEFAULT_SETTLE)}.",
        )
        parser.add_argument(
            "--half-width",
            type=float,
            default=DEFAULT_HALF_WIDTH,
            help="The active policy stops when every settled score's 95%% interval is within "
            f"this many points. Default: {DEFAULT_HALF_WIDTH:g}.",
        )
        parser.add_argument(
            "--crowd",
            default=QUALITY_BENCH_CROWD,
            help=f"The simulated crowd: {CROWD_SPEC_HELP}. Default, the quality bench's crowd: "
            f"{QUALITY_BENCH_CROWD}.",
        )
        parser.add_argument("--annotators", type=int, default=ANNOTATORS, help="Crowd size.")
        parser.add_argument(
            "--assessor-kappa",
            type=float,
            help="Add a simulated machine assessor to the active policy's predictor: the truth "
            "flipped at the rate giving this Cohen's kappa against it (drawn per seed).",
        )
        parser.add_argument(
            "--proxies",
            default="",
            help=f"Semantic proxies among {', '.join(PROXIES)} as predictor features (computed "
            "and cached on first use).",
        )
        parser.add_argument(
            "--shuffle-features",
            action="store_true",
            help="Shuffle the predictor's features: the useless-predictor control.",
        )
        parser.add_argument("--seeds", type=int, default=1, help="Seeded campaigns to average.")
        parser.add_argument("--first-seed", type=int, default=0)
        parser.add_argument("--depth", type=int, default=10)
        parser.add_argument("--format", choices=["table", "json"], default="table")

    def handle(self, *args, **options):
        dataset = get_dataset(options["dataset"])
        spec = SimulationSpec(
            policy=options["policy"],
            runs=_names(options["runs"], ()),
            crowd=options["crowd"],
            annotators=options["annotators"],
            seeds=options["seeds"],
            first_seed=options["first_seed"],
            settle=_names(options["settle"], METRICS),
            half_width=options["half_width"],
            assessor_kappa=options["assessor_kappa"],
            proxies=_names(options["proxies"], PROXIES),
            shuffle=options["shuffle_features"],
            depth=options["depth"],
        )
        quiet = options["verbosity"] == 0
        result = simulate_campaign(
            dataset, spec, progress=lambda text: quiet or self.stderr.write(text)
        )
        if not self.wrote_json(options, result, indent=2):
            self.stdout.write(render_table(result))


def render_table(result: dict) -> str:
    """The labels line and one line per run and metric, in points."""
    labels = result["labels"]
    share = labels["share"]
    lines = [
        f"{result['policy']} on {result['dataset']} ({result['queries']} queries, "
        f"{result['pairs']} pooled pairs, {len(result['seeds'])} seeds): "
        f"{labels['policy']:.0f} labels against FIRE's {labels['fire']:.0f}"
        + (f" ({share:.1%})" if share is not None else ""),
        f"{'run':<12} {'metric':<8} {'true':>7} {'estimate':>9} {'95% interval':>17} "
        f"{'error':>7} {'worst':>7} {'covered':>8}",
    ]
    for row in result["scores"]:
        lines.append(
            f"{row['run']:<12} {row['metric']:<8} {row['true']:7.2f} {row['estimate']:9.2f} "
            f"[{row['low']:6.2f}, {row['high']:6.2f}] {row['error']:+7.2f} "
            f"{row['worst_seed_error']:7.2f} {row['coverage']:8.0%}"
        )
    return "\n".join(lines)
