"""Time METEOR over all caption pairs (Wray et al., CVPR 2021, §4.4) against NLTK's
single_meteor_score.

Anchor: NLTK 3.10.4 scores about 2,250 pairs/s on one core, so YouCook2's 3,350 x 3,350
validation captions take well over an hour; :mod:`retrieval.proxies.meteor` must give the
same values at least 50x faster on one core. Seeded synthetic captions; NLTK timed on
``--nltk-pairs`` pairs, ours on the full matrix on one and all cores::

    .venv/bin/python bench/meteor_bench.py [--captions 2000] [--nltk-pairs 3000]
"""

import json
import os

import numpy as np
from harness import django_ready, machine, once, parser

TARGET_SPEEDUP = 50.0
ANCHOR = "NLTK single_meteor_score, about 2,250 pairs/s on one core"
YOUCOOK2_VALIDATION = 3_350

SUBJECTS = (
    "a man|a woman|a person|a boy|a girl|someone|a chef|the cook|a kid|a child|people|"
    "two men|a group of people|the man|A man|The woman|a guy|a lady|an old man|a young girl"
).split("|")
PLACES = (
    "the kitchen|a stage|the road|a field|the street|a room|the beach|a park|the house|"
    "a restaurant|the studio|a car|the table|the water|a forest"
).split("|")
ING = (
    "cooking|stirring|mixing|cutting|chopping|slicing|putting|placing|setting|talking|singing|"
    "dancing|playing|driving|running|walking|showing|explaining|pouring|frying|boiling|"
    "eating|riding|holding|making|adding|washing|peeling|rolling|baking|speaking|looking|"
    "watching|seeing|showing|displaying|presenting|creating|producing|starting|beginning|"
    "preparing|fixing|moving|shifting|going|traveling|jumping|leaping|laughing|smiling"
).split("|")
VERBS = (
    "cook|stir|mix|cut|chop|slice|put|place|set|add|pour|fry|boil|bake|peel|roll|wash|"
    "combine|blend|season|sprinkle|spread|fold|drain|heat|melt|whisk|beat|serve|remove|"
    "cuts|stirs|mixes|puts|places|adds|pours|fries|Cut|Put|Add|Stir|Mix|Place|lay|lays|"
    "arrange|position|trim|dice|mince|grate|shred|flip|turn|toss|coat|cover|brush|dip|"
    "transfer|move|shift|start|begin|prepare|make|create|show|demonstrate|simmer|steam|"
    "grill|roast|broil|chill|cool|freeze|knead|press|squeeze|blend|merge|combine|join"
).split("|")
INGREDIENTS = (
    "onion|onions|garlic|tomato|tomatoes|chicken|beef|pork|egg|eggs|flour|sugar|salt|pepper|"
    "oil|butter|water|milk|cheese|rice|noodles|potato|potatoes|carrot|carrots|sauce|"
    "the onion|the garlic|the chicken|the meat|the dough|the mixture|the batter|the eggs|"
    "the vegetables|the sauce|the rice|the noodles|chopped onions|sliced potatoes|"
    "diced tomatoes|minced garlic|olive oil|soy sauce|black pepper|green onions|"
    "the cut vegetables|some salt|a little oil|a pinch of salt"
).split("|")
UTENSILS = (
    "pan|saucepan|pot|bowl|wok|plate|tray|oven|skillet|grill|the pan|the saucepan|the pot|"
    "a bowl|the bowl|a large bowl|a big pot|a hot pan|the oven|the grill|the plate|a plate"
).split("|")
OBJECTS = (
    "a song|the guitar|a car|an automobile|a big car|a large dog|a dog|a cat|the ball|"
    "a video game|a game|the news|a story|a dish|some food|the food|a recipe|a toy|"
    "a bike|a horse|a movie|a picture|the car|the automobile|a motorcar|a machine|"
    "a vehicle|a truck|a song on stage|a tune|a melody|a speech|a talk|a lecture|a film|"
    "a show|a program|a big house|a large house|a huge building|a little girl|a small boy|"
    "the kitchen counter|a website|a phone|a computer|a laptop|a cartoon|an animation"
).split("|")
ADVERBS = (
    "slowly|quickly|fast|rapidly|well|together|gently|softly|thoroughly|completely|again|"
    "carefully|evenly|finely|roughly|lightly|briefly|properly|neatly"
).split("|")
PREPS = "in|into|on|onto|to|with|from|over|in the|on the".split("|")
MORE = (
    "and|then|while|until|for|about|for a few minutes|for 5 minutes|until golden brown|"
    "on medium heat|on high heat|to taste|at the same time|in the background|on the side"
).split("|")


def caption(rng: np.random.Generator) -> list[str]:
    """One MSR-VTT- or YouCook2-like caption, already split on spaces."""

    def pick(words):
        return words[rng.integers(len(words))]

    kind = rng.integers(6)
    if kind == 0:
        text = f"{pick(SUBJECTS)} is {pick(ING)} {pick(OBJECTS)} {pick(PREPS)} {pick(PLACES)}"
    elif kind == 1:
        text = f"{pick(SUBJECTS)} is {pick(ING)} {pick(INGREDIENTS)} {pick(PREPS)} {pick(UTENSILS)}"
    elif kind == 2:
        text = f"{pick(VERBS)} {pick(INGREDIENTS)} {pick(PREPS)} {pick(UTENSILS)}"
    elif kind == 3:
        text = f"{pick(VERBS)} {pick(INGREDIENTS)} and {pick(INGREDIENTS)} {pick(ADVERBS)}"
    elif kind == 4:
        text = f"{pick(SUBJECTS)} {pick(VERBS)} {pick(INGREDIENTS)}"
    else:
        text = f"{pick(VERBS)} {pick(INGREDIENTS)} {pick(MORE)} {pick(VERBS)} {pick(ADVERBS)}"
    while rng.random() < 0.35:
        text += f" {pick(MORE)} {pick(VERBS)} {pick(INGREDIENTS)} {pick(PREPS)} {pick(UTENSILS)}"
    return text.split()[:40]


def measure(args) -> None:
    """NLTK's METEOR on ``--nltk-pairs`` pairs and ours on the whole matrix of
    ``--captions`` synthetic captions, on one core and on all: the table, and the figures as
    one JSON line."""
    django_ready()  # RetrievalConfig.ready() puts the project's WordNet on NLTK's path
    from nltk.corpus import wordnet
    from nltk.translate.meteor_score import single_meteor_score

    from retrieval.proxies import meteor

    rng = np.random.default_rng(args.seed)
    captions = [caption(rng) for _ in range(args.captions)]
    lengths = np.array([len(c) for c in captions])
    wordnet.ensure_loaded()

    prepare_s, corpus = once(lambda: meteor.prepare(captions))

    refs = rng.integers(0, args.captions, args.nltk_pairs)
    hyps = rng.integers(0, args.captions, args.nltk_pairs)
    for r, h in zip(refs[:50], hyps[:50], strict=True):  # warm-up
        single_meteor_score(captions[r], captions[h])
    nltk_s, expected = once(
        lambda: np.array(
            [single_meteor_score(captions[r], captions[h]) for r, h in zip(refs, hyps, strict=True)]
        )
    )
    nltk_rate = args.nltk_pairs / nltk_s

    pairs = args.captions * args.captions
    meteor.meteor_matrix(corpus, np.arange(50), np.arange(50), workers=1)  # warm-up
    one_s, matrix = once(lambda: meteor.meteor_matrix(corpus, workers=1))
    all_s, matrix_all = once(lambda: meteor.meteor_matrix(corpus, workers=0))
    one_rate, all_rate = pairs / one_s, pairs / all_s
    max_diff = float(np.abs(matrix[refs, hyps] - expected).max())
    same = bool(np.array_equal(matrix, matrix_all))
    pairs_diff = float(np.abs(meteor.meteor_pairs(corpus, refs, hyps) - expected).max())

    youcook = YOUCOOK2_VALIDATION**2
    speedup = one_rate / nltk_rate
    print(f"Machine: {machine()}, load average {os.getloadavg()[0]:.2f} (1 min)")
    print(
        f"{args.captions:,} synthetic captions, {lengths.min()}-{lengths.max()} tokens "
        f"(mean {lengths.mean():.1f}), {len(corpus.words):,} words, {len(corpus.stems):,} stems, "
        f"{len(corpus.syn_indices):,} synonym links; anchor: {ANCHOR}\n"
    )
    print("| what | figure | anchor / target |\n|------|--------|-----------------|")
    print(f"| prepare (stems, WordNet, keys) | {prepare_s:.2f} s | once per caption set |")
    print(
        f"| NLTK single_meteor_score, {args.nltk_pairs:,} pairs, 1 core | {nltk_rate:,.0f} pairs/s "
        f"| ~2,250 pairs/s |"
    )
    print(
        f"| ours, {args.captions:,} x {args.captions:,} matrix, 1 core | {one_rate:,.0f} pairs/s "
        f"({one_s:.2f} s) | >= {TARGET_SPEEDUP * nltk_rate:,.0f} pairs/s |"
    )
    print(
        f"| ours, same matrix, {os.cpu_count()} cores (process start-up included) "
        f"| {all_rate:,.0f} pairs/s ({all_s:.2f} s) | |"
    )
    print(f"| speed-up vs NLTK, 1 core | {speedup:,.0f}x | >= {TARGET_SPEEDUP:g}x |")
    print(f"| speed-up vs NLTK, {os.cpu_count()} cores | {all_rate / nltk_rate:,.0f}x | |")
    print(
        f"| max abs diff vs NLTK, {args.nltk_pairs:,} pairs (matrix / pairs API) "
        f"| {max_diff:.3g} / {pairs_diff:.3g} | <= 1e-12 |"
    )
    print(f"| 1 core matrix == {os.cpu_count()} cores matrix | {same} | True |")
    print(
        f"| YouCook2 val {YOUCOOK2_VALIDATION:,} x {YOUCOOK2_VALIDATION:,} = {youcook / 1e6:.1f} M "
        f"pairs, projected | NLTK {youcook / nltk_rate / 60:,.1f} min; ours "
        f"{youcook / one_rate:,.1f} s (1 core), {youcook / all_rate:,.1f} s "
        f"({os.cpu_count()} cores) | |"
    )
    figures = {
        "captions": args.captions,
        "prepare_s": round(prepare_s, 3),
        "nltk_pairs_per_s": round(nltk_rate, 1),
        "ours_1core_pairs_per_s": round(one_rate, 1),
        "ours_all_cores_pairs_per_s": round(all_rate, 1),
        "cores": os.cpu_count(),
        "speedup_1core": round(speedup, 1),
        "speedup_all_cores": round(all_rate / nltk_rate, 1),
        "target_speedup": TARGET_SPEEDUP,
        "max_abs_diff": max_diff,
        "pairs_api_max_abs_diff": pairs_diff,
        "workers_agree": same,
        "youcook2_val_nltk_s": round(youcook / nltk_rate, 1),
        "youcook2_val_ours_1core_s": round(youcook / one_rate, 2),
        "youcook2_val_ours_all_cores_s": round(youcook / all_rate, 2),
    }
    print(json.dumps(figures))


def main() -> None:
    options = parser(__doc__, seed=True)
    options.add_argument("--captions", type=int, default=2000)
    options.add_argument("--nltk-pairs", type=int, default=3000)
    args = options.parse_args()
    measure(args)


if __name__ == "__main__":
    main()
