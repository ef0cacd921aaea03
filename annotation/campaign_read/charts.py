"""Agreement reports (:mod:`annotation.campaign_read.reporting`) as SVG for the agreement page,
apart from the services so that the ``agreement`` command's JSON carries numbers, not markup.
"""

from annotation.campaign_read.reporting import AgreementReport, ProxyReport
from annotation.people.scores import CampaignScores
from annotation.simulation.replay_service import OrderComparison
from retrieval.proxies import PROXY_LABELS
from retrieval.scoring import plots


def agreement_charts(report: AgreementReport) -> list[str]:
    """Pairs by number of labels, then their percent agreement (FIRE Fig. 7) when defined."""
    by_count = report.by_label_count
    if not by_count:
        return []
    categories = [str(row.labels) for row in by_count]
    charts = [
        plots.bar_chart(
            categories,
            [plots.Series("pairs", [row.pairs for row in by_count])],
            title="Pairs by number of labels",
            y_label="pairs",
        )
    ]
    if any(row.percent_agreement is not None for row in by_count):
        shares = [
            None if row.percent_agreement is None else 100 * row.percent_agreement
            for row in by_count
        ]
        charts.append(
            plots.bar_chart(
                categories,
                [plots.Series("agreement", shares)],
                title="Percent agreement by number of labels (FIRE Fig. 7)",
                y_label="% agreement",
                y_max=100,
            )
        )
    return charts


def proxy_alpha_chart(proxies: ProxyReport) -> str:
    """Each proxy's alpha with the humans by relevance threshold; empty without curves."""
    if not proxies.curves:
        return ""
    return plots.line_chart(
        proxies.curve_thresholds,
        [
            plots.Series(
                PROXY_LABELS[name], [v if v is not None and v >= 0 else None for v in values]
            )
            for name, values in proxies.curves.items()
        ],
        title="Krippendorff's alpha with the humans when S >= threshold counts as relevant",
        description="Thresholds where alpha is negative (worse than chance) are not drawn.",
        x_label="threshold",
        y_label="alpha",
    )


def judging_order_charts(comparison: OrderComparison) -> list[str]:
    """Positives found and the runs' mean absolute C@1 error against judgements made, one
    line per replayed judging order, each named at its end (too many for a legend)."""
    replays = comparison.replays
    if not replays or not replays[0].steps:
        return []
    x = [step.judged for step in replays[0].steps]
    found = [
        plots.Series(
            r.strategy,
            [100 * s.positives_found / max(r.pool_positives, 1) for s in r.steps],
        )
        for r in replays
    ]
    error = [
        plots.Series(
            r.strategy,
            [
                100 * sum(abs(e["C@1"]) for e in s.errors.values()) / max(len(s.errors), 1)
                for s in r.steps
            ],
        )
        for r in replays
    ]
    return [
        plots.line_chart(
            x,
            found,
            title="Pool positives found vs judgements",
            x_label="judgements",
            y_label="% of positives",
            y_max=100,
            direct_labels=True,
        ),
        plots.line_chart(
            x,
            error,
            title="C@1 error vs judgements (mean over runs, points)",
            x_label="judgements",
            y_label="|error|, points",
            direct_labels=True,
        ),
    ]


def gold_accuracy_chart(scores: CampaignScores) -> str:
    """Each annotator's rolling gold accuracy after each gold answer; empty without any."""
    lines = [score for score in scores.annotators if score.rolling_gold_accuracy]
    if not lines:
        return ""
    longest = max(len(score.rolling_gold_accuracy) for score in lines)
    return plots.line_chart(
        list(range(1, longest + 1)),
        [
            plots.Series(
                score.annotator,
                [100 * v for v in score.rolling_gold_accuracy]
                + [None] * (longest - len(score.rolling_gold_accuracy)),
            )
            for score in lines
        ],
        title="Gold accuracy over time (rolling, last 50 gold pairs)",
        description="Each annotator's share of gold pairs judged right over their last 50, "
        "after each gold answer in time order.",
        x_label="gold pairs judged",
        y_label="% right",
        y_max=100,
    )
