"""The report's charts drawn by ``retrieval/scoring/plots.py`` beside matplotlib's SVG: time per
chart, bytes, a fresh process's import, and what a screen reader or a pointer gets from each.

matplotlib is the charting library at hand (the dev dependencies bring it with trectools); the
house asks a hand-written replacement of a library for a measured reason, and this is it::

    .venv/bin/python bench/charts_bench.py [--repeats 30]
"""

import io
import statistics
import subprocess
import sys
import time

import numpy as np
from harness import ROOT, log, machine, parser

from retrieval.scoring import plots

SERIES = ("jpose", "minilm", "mme", "random")


def charts(rng: np.random.Generator) -> dict[str, dict]:
    """Three charts as the report draws them: positives per query (FIRE Fig. 11: grouped bars,
    4 runs x 31 counts), the annotation budget (FIRE Fig. 4: 4 lines x 10 budgets) and positives
    by caption length (FIRE Fig. 2: a 6 x 12 heatmap)."""
    counts = [str(n) for n in range(30)] + ["30+"]
    return {
        "bars": {
            "categories": counts,
            "values": rng.integers(0, 120, (len(SERIES), len(counts))).astype(float),
        },
        "lines": {
            "x": np.linspace(50, 500, 10),
            "values": np.sort(rng.uniform(1, 15, (len(SERIES), 10)), axis=1)[:, ::-1],
        },
        "heatmap": {
            "rows": [f"{n}-{n + 2}" for n in range(3, 21, 3)],
            "columns": [str(n) for n in range(12)],
            "values": rng.integers(0, 400, (6, 12)).astype(float),
        },
    }


def ours(kind: str, data: dict) -> str:
    if kind == "bars":
        series = [plots.Series(n, v.tolist()) for n, v in zip(SERIES, data["values"], strict=True)]
        return plots.bar_chart(
            data["categories"], series, title="Positives per query", x_label="positives"
        )
    if kind == "lines":
        series = [plots.Series(n, v.tolist()) for n, v in zip(SERIES, data["values"], strict=True)]
        return plots.line_chart(
            data["x"].tolist(), series, title="95th percentile", x_label="queries judged"
        )
    return plots.heatmap(
        data["rows"], data["columns"], data["values"].tolist(), title="Positives by length"
    )


def theirs(kind: str, data: dict, text_as_paths: bool) -> str:
    """The same chart from matplotlib's SVG backend, at the same 640 x 260 px size."""
    import matplotlib

    matplotlib.use("svg")
    from matplotlib import pyplot

    matplotlib.rcParams["svg.fonttype"] = "path" if text_as_paths else "none"
    figure, axes = pyplot.subplots(figsize=(6.4, 2.6), dpi=100)
    if kind == "bars":
        width = 0.8 / len(SERIES)
        x = np.arange(len(data["categories"]))
        for j, (name, values) in enumerate(zip(SERIES, data["values"], strict=True)):
            axes.bar(x + j * width, values, width, label=name, color=plots.PALETTE[j])
        axes.set_xticks(x + 0.4, data["categories"])
        axes.set_xlabel("positives")
    elif kind == "lines":
        for j, (name, values) in enumerate(zip(SERIES, data["values"], strict=True)):
            axes.plot(data["x"], values, marker="o", label=name, color=plots.PALETTE[j])
        axes.set_xlabel("queries judged")
    else:
        axes.imshow(data["values"], cmap="Oranges", aspect="auto")
        for (i, j), value in np.ndenumerate(data["values"]):
            axes.text(j, i, f"{value:.0f}", ha="center", va="center", fontsize=7)
        axes.set_xticks(range(len(data["columns"])), data["columns"])
        axes.set_yticks(range(len(data["rows"])), data["rows"])
    if kind != "heatmap":
        axes.legend(fontsize=8)
    axes.set_title("chart")
    out = io.StringIO()
    figure.savefig(out, format="svg")
    pyplot.close(figure)
    return out.getvalue()


def median_ms(draw, repeats: int) -> float:
    draw()  # the first call pays for caches and fonts
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        draw()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def import_seconds(statement: str, repeats: int = 3) -> float:
    """A fresh interpreter's time to run ``statement`` less an empty one's (median)."""

    def run(code: str) -> float:
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)
        return time.perf_counter() - start

    bare = statistics.median(run("pass") for _ in range(repeats))
    return statistics.median(run(statement) for _ in range(repeats)) - bare


def main() -> None:
    options = parser(__doc__)
    options.add_argument("--repeats", type=int, default=30)
    args = options.parse_args()
    print(f"machine: {machine()}")
    try:
        import matplotlib
    except ImportError:
        sys.exit("matplotlib is not installed: make test installs it with the dev dependencies")
    print(f"matplotlib {matplotlib.__version__}")
    made = charts(np.random.default_rng(0))
    print("| chart | plots.py ms | bytes | matplotlib ms (text as paths / as text) | bytes |")
    for kind, data in made.items():
        log(f"drawing {kind}")
        svg = ours(kind, data)
        mine = median_ms(lambda k=kind, d=data: ours(k, d), args.repeats)
        paths = median_ms(lambda k=kind, d=data: theirs(k, d, True), args.repeats)
        text = median_ms(lambda k=kind, d=data: theirs(k, d, False), args.repeats)
        sizes = [len(theirs(kind, data, flag).encode()) for flag in (True, False)]
        print(
            f"| {kind} | {mine:.2f} | {len(svg.encode()):,} | {paths:.1f} / {text:.1f} | "
            f"{sizes[0]:,} / {sizes[1]:,} |"
        )
        print(
            f"  {kind}: <title>/<desc> for screen readers: plots.py "
            f"{'<desc>' in svg}, matplotlib {'<desc>' in theirs(kind, data, False)}; "
            f"a value tooltip per mark: plots.py {svg.count('<title>') - 1}, matplotlib 0"
        )
    log("timing imports in fresh interpreters")
    ours_import = import_seconds("import retrieval.scoring.plots")
    theirs_import = import_seconds(
        "import matplotlib; matplotlib.use('svg'); import matplotlib.pyplot"
    )
    print(f"import: plots.py {ours_import:.3f} s, matplotlib.pyplot {theirs_import:.3f} s")


if __name__ == "__main__":
    main()
