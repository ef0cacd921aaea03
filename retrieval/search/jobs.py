"""The search job kind: every query caption searched in a model's index (a run)."""

from django import forms

from jobs.progress import Reporter
from jobs.registry import JobKind, register
from retrieval.datasets.lookup import get_dataset, get_model
from retrieval.encoders.jobs import MODEL_RESULT, ModelForm, model_description


class PredictForm(ModelForm):
    k = forms.IntegerField(
        min_value=1,
        max_value=10000,
        initial=20,
        required=False,
        help_text="Depth of each ranked list.",
    )
    index = forms.ChoiceField(
        choices=[("exact", "exact"), ("ivf", "ivf"), ("hnsw", "hnsw")],
        initial="exact",
        required=False,
        help_text="exact: inner product on L2-normalised vectors; ivf or hnsw for large "
        "collections (the run reports its recall@k against exact search).",
    )
    nlist = forms.IntegerField(
        min_value=1,
        max_value=1_000_000,
        required=False,
        help_text="IVF lists (default about 4 sqrt(n)).",
    )
    nprobe = forms.IntegerField(
        min_value=1, max_value=1_000_000, required=False, help_text="IVF lists visited per query."
    )
    ef_search = forms.IntegerField(
        min_value=1, max_value=1_000_000, required=False, help_text="HNSW candidates per query."
    )


def run_predict(
    reporter: Reporter,
    dataset: str,
    model: str,
    split: str = "test",
    k: int = 20,
    **search: str | int,
) -> dict:
    """Search every query caption; ``search`` holds the form's index kind and its settings."""
    from retrieval.search.service import predict

    found = get_model(get_dataset(dataset), model)
    reporter.step(f"indexing and searching the {split} split (top {k})")
    kind = search.pop("index", "") or "exact"
    run = predict(found, k=k, split=split, index_kind=kind, **search)
    return {"run": run.name, "queries": run.query_count, "depth": run.depth, **run.metadata}


register(
    JobKind(
        "predict",
        "Search every query caption (a run)",
        run_predict,
        PredictForm,
        describe=model_description("predict with"),
        **MODEL_RESULT,
    )
)
