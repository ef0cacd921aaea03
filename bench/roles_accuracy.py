"""Per-role accuracy of the dependency-parse role rules on the hand-labelled captions.

Scores :mod:`retrieval.datasets.roles` against ``tests/retrieval/datasets/test_semantic_roles.py``'s
frames (exact span match, per role and style); ``--errors`` lists the mismatches::

    .venv/bin/python bench/roles_accuracy.py [--errors]
"""

from harness import django_ready, machine, once, parser


def table(title: str, captions: dict) -> None:
    from retrieval.datasets.roles import frames, role_graphs, score_frames
    from retrieval.encoders.text import load_spacy

    predicted = [frames(graph) for graph in role_graphs(list(captions), nlp=load_spacy())]
    print(f"\n{title}: {len(captions)} captions")
    print("| role | expected | predicted | correct | precision | recall | F1 |")
    print("|---|---|---|---|---|---|---|")
    for s in score_frames(predicted, list(captions.values())):
        print(
            f"| {s.role} | {s.expected} | {s.predicted} | {s.true_positives} "
            f"| {s.precision:.3f} | {s.recall:.3f} | {s.f1:.3f} |"
        )


def main() -> None:
    options = parser(__doc__)
    options.add_argument("--errors", action="store_true", help="Print each mismatched caption.")
    args = options.parse_args()
    django_ready()
    from django.conf import settings

    from retrieval.datasets.roles import frames, role_graphs
    from retrieval.encoders.text import load_spacy
    from tests.retrieval.datasets.test_semantic_roles import (
        COOKING,
        DEMO,
        HELD_OUT,
        LABELLED,
        OPEN_DOMAIN,
    )

    load_spacy()
    elapsed, graphs = once(lambda: role_graphs(list(LABELLED), nlp=load_spacy()))
    print(f"machine: {machine()}; spaCy pipeline {settings.FIREPOOL_SPACY_MODEL}")
    print(f"parse + rules: {len(LABELLED)} captions in {elapsed * 1000:.0f} ms")
    for title, captions in (
        ("all", LABELLED),
        ("demo grammar", DEMO),
        ("cooking", COOKING),
        ("open domain", OPEN_DOMAIN),
        ("held out", HELD_OUT),
    ):
        table(title, captions)
    if args.errors:
        for (caption, expected), graph in zip(LABELLED.items(), graphs, strict=True):
            if frames(graph) != expected:
                print(f"\n{caption}\n  expected  {expected}\n  predicted {frames(graph)}")


if __name__ == "__main__":
    main()
