"""Compute (and cache) semantic-proxy relevance matrices for a dataset split."""

from pathlib import Path

from jobs.commands import BaseCommand, add_form_options, check_options
from jobs.runner import cleaned
from retrieval.datasets.lookup import get_dataset
from retrieval.proxies import PROXIES, PROXY_LABELS
from retrieval.proxies.jobs import ProxiesForm
from retrieval.proxies.service import (
    SUMMARY_THRESHOLDS,
    ProxyOptions,
    proxy_relevance,
    proxy_summary,
)


def add_proxy_options(parser, *, proxy_choices: list[str] | None = None) -> None:
    """Options shared by the commands that build proxy matrices (``proxy_choices``: the
    command's own --dataset, --proxy and --split, where no form gives them)."""
    if proxy_choices is not None:
        parser.add_argument("--dataset", required=True)
        parser.add_argument("--proxy", required=True, choices=proxy_choices)
        parser.add_argument("--split", default="test", help="Videos and captions of this split.")
    parser.add_argument(
        "--dedupe-captions",
        action="store_true",
        help="Identical caption texts (case and spaces ignored) become one text item, "
        "relevant to each of their videos (EPIC-KITCHENS-100 style).",
    )
    parser.add_argument(
        "--verb-classes", type=Path, help="SYN: an id,key,instances CSV of verb classes."
    )
    parser.add_argument(
        "--noun-classes", type=Path, help="SYN: an id,key,instances CSV of noun classes."
    )
    parser.add_argument(
        "--workers", type=int, default=0, help="METEOR processes (0: one per core)."
    )


def options_for(proxy: str, options) -> ProxyOptions:
    return ProxyOptions(
        proxy,
        split=options["split"],
        dedupe=options["dedupe_captions"],
        verb_classes=options["verb_classes"],
        noun_classes=options["noun_classes"],
    )


def relevance_for(dataset, proxy: str, options, **kwargs):
    """The proxy's relevance under the command's options (a progress bar for a table)."""
    return proxy_relevance(
        dataset,
        options_for(proxy, options),
        progress=options["verbosity"] > 0 and options["format"] == "table",
        workers=options["workers"],
        **kwargs,
    )


class Command(BaseCommand):
    help = (
        "Compute the video-to-caption relevance S of a semantic proxy (bow, pos, syn, met; "
        "Wray et al. §4.4) on a dataset split and cache it on disk, keyed by the dataset's "
        "content and the proxy settings. Prints, per proxy, the mean number of captions per "
        "video with S >= T (the paper's Fig. 4)."
    )

    def add_arguments(self, parser):
        add_form_options(parser, ProxiesForm)  # as the proxies job kind
        add_proxy_options(parser)
        parser.add_argument("--format", choices=["table", "json"], default="table")

    def handle(self, *args, **options):
        given = cleaned(check_options(ProxiesForm, options))
        options = {**options, **given, "split": given.get("split") or "test"}
        dataset = get_dataset(given["dataset"])
        rebuild = given.get("rebuild", False)
        proxies = PROXIES if options["proxy"] == "all" else (options["proxy"],)
        results = [
            proxy_summary(relevance_for(dataset, proxy, options, rebuild=rebuild))
            for proxy in proxies
        ]
        if self.wrote_json(options, {"dataset": dataset.name, "proxies": results}):
            return
        for result in results:
            self.stdout.write(
                f"{PROXY_LABELS[result['proxy']]}: {result['videos']} videos x "
                f"{result['texts']} text items ({result['captions']} captions), "
                f"{'from cache' if result['cached'] else 'computed'} "
                f"({result['seconds']:.2f} s to compute), mean S {result['mean']:.4f}"
                + (f"; synsets: {result['synset_source']}" if result["synset_source"] else "")
            )
            cells = "  ".join(
                f"T={t:g}: {n:.1f}"
                for t, n in zip(SUMMARY_THRESHOLDS, result["relevant_per_video"], strict=True)
            )
            self.stdout.write(f"  captions per video with S >= T: {cells}")
            self.stdout.write(f"  cache: {result['path']}")
