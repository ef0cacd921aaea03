"""Score a model with nDCG under a semantic proxy's relevance (Wray et al. Eq. 3)."""

from jobs.commands import BaseCommand
from retrieval.datasets.lookup import get_dataset, get_model
from retrieval.management.commands.proxies import add_proxy_options, options_for, relevance_for
from retrieval.proxies import PROXIES, PROXY_LABELS
from retrieval.proxies.ndcg import GAINS
from retrieval.proxies.service import (
    ProxyError,
    model_similarity,
    relevance_frame,
    score_similarity,
    truth_relevance,
)


class Command(BaseCommand):
    help = (
        "nDCG of a model with graded relevance from a semantic proxy: every query ranks all "
        "items of the other modality, gain = relevance (or 2^S - 1 with --gain exp), cut at "
        "the query's number of relevant items, mean of video-to-text and text-to-video. "
        "Models with embeddings are scored over the full similarity matrix, run-file models "
        "over their run's depth (text-to-video only). --proxy truth uses a synthetic "
        "dataset's exhaustive relevance. --threshold T adds mAP with S >= T relevant."
    )

    def add_arguments(self, parser):
        add_proxy_options(parser, proxy_choices=[*PROXIES, "truth"])
        parser.add_argument("--model", required=True)
        parser.add_argument("--gain", choices=GAINS, default="linear")
        parser.add_argument("--threshold", type=float, help="Also report mAP with S >= T.")
        parser.add_argument("--format", choices=["table", "json"], default="table")

    def handle(self, *args, **options):
        dataset = get_dataset(options["dataset"])
        model = get_model(dataset, options["model"])
        proxy = options["proxy"]
        if proxy == "truth":
            relevance = relevance_frame(dataset, options_for(PROXIES[0], options))
            matrix = truth_relevance(dataset, relevance)
            if matrix is None:
                raise ProxyError(f"dataset {dataset.name!r} has no ground-truth relevance")
        else:
            relevance = relevance_for(dataset, proxy, options)
            matrix = relevance.matrix
        similarity = model_similarity(model, relevance)
        score = score_similarity(
            similarity, matrix, gain=options["gain"], threshold=options["threshold"]
        )
        result = {
            "proxy": proxy,
            "nDCG": score.ndcg.mean,
            "v2t": score.ndcg.v2t,
            "t2v": score.ndcg.t2v,
            "queries": {"v2t": score.ndcg.v2t_queries, "t2v": score.ndcg.t2v_queries},
            "items": {"videos": int(matrix.shape[0]), "texts": int(matrix.shape[1])},
            "model": model.name,
            "dataset": dataset.name,
            "split": options["split"],
            "gain": options["gain"],
            "dedupe_captions": options["dedupe_captions"],
            "scored_over": score.note,
        }
        if score.mean_ap is not None:
            result["threshold"] = options["threshold"]
            result["mAP"] = score.mean_ap.mean
            result["mAP_v2t"] = score.mean_ap.v2t
            result["mAP_t2v"] = score.mean_ap.t2v
        if self.wrote_json(options, result):
            return
        label = PROXY_LABELS.get(proxy, "ground truth")
        self.stdout.write(
            f"{model.name} on {dataset.name} ({options['split']}), {label} relevance, "
            f"{options['gain']} gain: nDCG {_f(score.ndcg.mean)} "
            f"(v2t {_f(score.ndcg.v2t)} over {score.ndcg.v2t_queries} videos, "
            f"t2v {_f(score.ndcg.t2v)} over {score.ndcg.t2v_queries} texts)"
        )
        if score.mean_ap is not None:
            self.stdout.write(
                f"mAP at S >= {options['threshold']:g}: {_f(score.mean_ap.mean)} "
                f"(v2t {_f(score.mean_ap.v2t)}, t2v {_f(score.mean_ap.t2v)})"
            )
        self.stdout.write(f"Scored over: {score.note}")


def _f(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4f}"
