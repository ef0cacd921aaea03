"""Pure: how a machine assessor's judgements compare with the humans', every assessor at once.

A machine's verdict on a pair is its label, or, without one, its score thresholded at
:data:`THRESHOLD` (``score >= 0.5`` is relevant). Against the gold labels: accuracy with a
Wilson interval, as the annotators' (Wilson 1927). Against the humans' resolved labels
(FIRE §3.1; pairs still pending or in disagreement are left out): sensitivity, specificity,
Cohen's kappa (Cohen 1960) and Krippendorff's nominal alpha with the machine and the humans
as two coders of each pair (Krippendorff 2011, through the project's
:func:`annotation.campaign_read.agreement.alpha_from_counts`), and the ROC AUC of the score.
Each 2 x 2 table is one ``np.bincount`` over all assessors.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from annotation.campaign_read.agreement import alpha_from_counts
from annotation.campaign_read.proxy_agreement import roc_auc
from annotation.people.quality import wilson_interval

THRESHOLD = 0.5
"""A score at or above this is a verdict of relevant when the machine gave no label."""
NO_LABEL = -1
"""The code of a missing machine label, or of a pair without a final human or gold label."""
UNIT_PATTERNS = np.array([[2, 0], [0, 2], [1, 1]])
"""(irrelevant, relevant) value counts of a pair two coders judged: both irrelevant, both
relevant, split: the units alpha counts."""


@dataclass(frozen=True)
class AssessorFigures:
    """One assessor beside the humans; None where a figure is undefined (no pair to compare,
    or no variation). ``confusion``: [[both irrelevant, machine relevant only], [humans
    relevant only, both relevant]] over ``compared`` pairs, humans in rows."""

    judged: int
    relevant_share: float | None
    gold: int
    gold_correct: int
    gold_accuracy: float | None
    gold_low: float | None
    gold_high: float | None
    compared: int
    confusion: tuple[tuple[int, int], tuple[int, int]]
    sensitivity: float | None
    specificity: float | None
    kappa: float | None
    alpha: float | None
    auc: float | None


def verdicts(scores: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Each judgement's verdict (1 relevant, 0 irrelevant): its label where given
    (``labels`` 1 or 0, :data:`NO_LABEL` when missing), else ``score >= THRESHOLD``."""
    scores = np.asarray(scores, dtype=np.float64)
    labels = np.asarray(labels, dtype=np.int64)
    if ((labels == NO_LABEL) & np.isnan(scores)).any():
        raise ValueError("a judgement needs a label or a score")
    return np.where(labels != NO_LABEL, labels, scores >= THRESHOLD).astype(np.int64)


def confusion_tables(
    assessor: np.ndarray, machine: np.ndarray, truth: np.ndarray, n_assessors: int
) -> np.ndarray:
    """Per assessor (assessors x 2 x 2): pairs by ``truth`` (rows, 0/1) and ``machine``
    verdict (columns); judgements whose truth is :data:`NO_LABEL` (or below) are left out."""
    assessor = np.asarray(assessor, dtype=np.int64)
    machine = np.asarray(machine, dtype=np.int64)
    truth = np.asarray(truth, dtype=np.int64)
    known = truth >= 0
    flat = np.bincount(
        assessor[known] * 4 + truth[known] * 2 + machine[known], minlength=4 * n_assessors
    )
    return flat.reshape(n_assessors, 2, 2)


def cohen_kappa(tables: np.ndarray) -> np.ndarray:
    """Cohen's kappa of each 2 x 2 table (``(p_o - p_e) / (1 - p_e)``, Cohen 1960), NaN when
    the table is empty or chance agreement is already perfect."""
    tables = np.asarray(tables, dtype=np.float64)
    n = tables.sum(axis=(1, 2))
    with np.errstate(divide="ignore", invalid="ignore"):
        observed = (tables[:, 0, 0] + tables[:, 1, 1]) / n
        chance = (tables.sum(axis=2) * tables.sum(axis=1)).sum(axis=1) / (n * n)
        kappa = (observed - chance) / (1.0 - chance)
    return np.where((n > 0) & (chance < 1.0), kappa, np.nan)


def two_coder_alpha(tables: np.ndarray) -> np.ndarray:
    """Krippendorff's nominal alpha of each 2 x 2 table, machine and humans two coders of every
    pair: the project's alpha over the three unit patterns, weighted by the table (NaN where
    undefined: no pair, or every value the same)."""
    tables = np.asarray(tables, dtype=np.float64)
    weights = np.stack(
        [tables[:, 0, 0], tables[:, 1, 1], tables[:, 0, 1] + tables[:, 1, 0]], axis=1
    )
    if len(weights) == 0:
        return np.zeros(0)
    return np.asarray(alpha_from_counts(UNIT_PATTERNS, weights), dtype=np.float64)


def assessor_figures(
    assessor: np.ndarray,
    scores: np.ndarray,
    labels: np.ndarray,
    human: np.ndarray,
    gold: np.ndarray,
    n_assessors: int,
) -> list[AssessorFigures]:
    """Every assessor's figures from one entry per machine judgement: ``assessor`` index,
    ``scores`` (NaN when missing), ``labels`` (1, 0 or :data:`NO_LABEL`), and for its pair the
    humans' resolved label and the gold label (1, 0, or negative when there is none)."""
    assessor = np.asarray(assessor, dtype=np.int64)
    scores = np.asarray(scores, dtype=np.float64)
    human = np.asarray(human, dtype=np.int64)
    gold = np.asarray(gold, dtype=np.int64)
    if not (len(assessor) == len(scores) == len(labels) == len(human) == len(gold)):
        raise ValueError("one entry per machine judgement in every array")
    machine = verdicts(scores, labels)
    judged = np.bincount(assessor, minlength=n_assessors)
    relevant = np.bincount(assessor, weights=machine, minlength=n_assessors)
    versus_gold = confusion_tables(assessor, machine, gold, n_assessors)
    gold_n = versus_gold.sum(axis=(1, 2))
    gold_right = versus_gold[:, 0, 0] + versus_gold[:, 1, 1]
    low, high = wilson_interval(gold_right, gold_n)
    tables = confusion_tables(assessor, machine, human, n_assessors)
    kappa, alpha = cohen_kappa(tables), two_coder_alpha(tables)
    rows = []
    for a in range(n_assessors):
        table = tables[a]
        scored = (assessor == a) & (human >= 0) & np.isfinite(scores)
        rows.append(
            AssessorFigures(
                judged=int(judged[a]),
                relevant_share=_share(relevant[a], judged[a]),
                gold=int(gold_n[a]),
                gold_correct=int(gold_right[a]),
                gold_accuracy=_share(gold_right[a], gold_n[a]),
                gold_low=float(low[a]) if gold_n[a] else None,
                gold_high=float(high[a]) if gold_n[a] else None,
                compared=int(table.sum()),
                confusion=(
                    (int(table[0, 0]), int(table[0, 1])),
                    (int(table[1, 0]), int(table[1, 1])),
                ),
                sensitivity=_share(table[1, 1], table[1].sum()),
                specificity=_share(table[0, 0], table[0].sum()),
                kappa=_finite(kappa[a]),
                alpha=_finite(alpha[a]),
                auc=roc_auc(scores[scored], human[scored] == 1) if scored.any() else None,
            )
        )
    return rows


def _share(part: float, whole: float) -> float | None:
    return float(part / whole) if whole else None


def _finite(value: float) -> float | None:
    return float(value) if np.isfinite(value) else None
