"""The semantic proxies' job kind: a dataset's proxy relevance matrices."""

from django import forms

from jobs.fields import YesNoField
from jobs.progress import Reporter
from jobs.registry import JobKind, register
from retrieval import job_results
from retrieval.datasets.lookup import get_dataset
from retrieval.forms import DatasetForm
from retrieval.proxies import PROXIES


class ProxiesForm(DatasetForm):
    proxy = forms.ChoiceField(choices=[(p, p) for p in (*PROXIES, "all")], initial="all")
    split = forms.CharField(
        max_length=20,
        initial="test",
        required=False,
        help_text="Videos and captions of this split.",
    )
    rebuild = YesNoField(help_text="Compute again, ignoring the cache.")


def run_proxies(
    reporter: Reporter, dataset: str, proxy: str, split: str = "", rebuild: bool = False
) -> dict:
    from retrieval.proxies.service import ProxyOptions, proxy_relevance, proxy_summary

    found = get_dataset(dataset)
    names = PROXIES if proxy == "all" else (proxy,)
    summaries = []
    reporter.step("semantic-proxy matrices", total=len(names))
    for name in names:
        reporter.message = f"semantic-proxy matrix: {name}"
        reporter.flush()
        relevance = proxy_relevance(
            found, ProxyOptions(name, split=split or "test"), workers=1, rebuild=rebuild
        )
        summary = proxy_summary(relevance)
        summary.pop("path")
        summaries.append(summary)
        reporter.advance()
    return {"dataset": found.name, "proxies": summaries}


register(
    JobKind(
        "proxies",
        "Semantic-proxy relevance matrices",
        run_proxies,
        ProxiesForm,
        describe=lambda a: f"{a['proxy']} proxy matrices of {a['dataset']}",
        result_template="retrieval/job_results/proxies.html",
        result_context=job_results.proxies,
    )
)
