"""The scoring job kinds: runs re-scored, or one run scored, with a label set; the forms check
the label set and runs exist before a job is queued."""

from jobs.fields import YesNoField
from jobs.progress import Reporter
from jobs.registry import RESEARCH, JobKind, register
from retrieval import job_results
from retrieval.datasets.lookup import get_dataset, get_label_set, get_run
from retrieval.forms import (
    LABEL_SET_NAMES,
    RUN_NAMES,
    DatasetForm,
    PickedName,
    PickedNames,
    found_or_invalid,
    split_names,
)


class ScoringForm(DatasetForm):
    """A label set and runs of the dataset to score, each checked to exist."""

    labels = PickedName(
        LABEL_SET_NAMES,
        blank="the original positives only",
        max_length=200,
        required=False,
        help_text="Label set name.",
    )

    def run_names(self, data: dict) -> list[str]:
        return []

    def clean(self) -> dict:
        data = super().clean()
        if data.get("dataset"):
            dataset = get_dataset(data["dataset"])
            if data.get("labels"):
                found_or_invalid(get_label_set, dataset, data["labels"])
            for name in self.run_names(data):
                found_or_invalid(get_run, dataset, name)
        return data


class RescoreForm(ScoringForm):
    runs = PickedNames(
        RUN_NAMES,
        max_length=2000,
        required=False,
        help_text="Runs of the dataset to re-score (none ticked: every run).",
    )
    only_labelled = YesNoField(help_text="Only the queries the label set judges.")

    def run_names(self, data: dict) -> list[str]:
        return split_names(data.get("runs", ""))


def label_set_named(dataset, labels: str):
    """The dataset's label set ``labels``, None for none (the original positives only)."""
    return get_label_set(dataset, labels) if labels else None


def run_rescore(
    reporter: Reporter,
    dataset: str,
    labels: str = "",
    runs: str = "",
    only_labelled: bool = False,
) -> dict:
    from retrieval.scoring.rescoring_service import rescore_dataset

    found = get_dataset(dataset)
    label_set = label_set_named(found, labels)
    reporter.step("re-scoring runs with the corrected positives")
    names = split_names(runs) or None
    return rescore_dataset(found, label_set, names, only_labelled=only_labelled).result.as_dict()


class ScoreRunForm(ScoringForm):
    run = PickedName(RUN_NAMES, max_length=100)

    def run_names(self, data: dict) -> list[str]:
        return [data["run"]] if data.get("run") else []


def run_score_run(reporter: Reporter, dataset: str, run: str, labels: str = "") -> dict:
    from retrieval.scoring.run_scoring import score_run

    found = get_dataset(dataset)
    label_set = label_set_named(found, labels)
    reporter.step(f"scoring {run} with the corrected positives")
    return score_run(found, run, label_set).as_dict()


def _with_labels(arguments: dict) -> str:
    return f" with {arguments['labels']}" if arguments.get("labels") else ""


register(
    JobKind(
        "rescore",
        "Re-score runs with a label set",
        run_rescore,
        RescoreForm,
        permission=RESEARCH,
        describe=lambda a: f"re-score {a['dataset']}{_with_labels(a)}",
        result_template="retrieval/job_results/rescore.html",
        result_context=job_results.rescore,
    )
)


register(
    JobKind(
        "score_run",
        "Score one run with a label set",
        run_score_run,
        ScoreRunForm,
        permission=RESEARCH,
        describe=lambda a: f"score {a['run']} on {a['dataset']}{_with_labels(a)}",
        result_template="retrieval/job_results/score_run.html",
        result_context=job_results.score_run,
    )
)
