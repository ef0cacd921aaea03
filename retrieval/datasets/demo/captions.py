"""The caption grammar of the demo world: scene -> (text, assertion) pairs, both built from
the same choices (object, attributes, synonyms) so they agree exactly. Captions vary in
specificity like crowd captions (FIRE §4.1): "a shape moves" fits most videos, "a crimson
disc rolls to the left past a blue star on grass" very few."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .scene import (
    DIRECTIONAL_MOTIONS,
    MOVING,
    Assertion,
    ObjectSpec,
    Scene,
    SceneObject,
    is_relevant,
)

LEVELS: tuple[str, ...] = ("generic", "medium", "specific", "full", "relation", "count")
"""Specificity levels, from "one attribute" to "two objects" and "exactly n objects"."""
QUERY_LEVEL_WEIGHTS: dict[str, float] = dict(
    zip(LEVELS, (0.2, 0.25, 0.2, 0.15, 0.1, 0.1), strict=True)
)
"""How often a test video's query caption has each level (as :data:`LEVELS`): a mix of broad
and narrow."""
CAPTION_LEVEL_WEIGHTS: dict[str, float] = dict(
    zip(LEVELS, (0.15, 0.25, 0.25, 0.15, 0.1, 0.1), strict=True)
)

SHAPE_NOUNS: dict[str, tuple[tuple[str, str], ...]] = {
    "circle": (("circle", "circles"), ("ball", "balls"), ("disc", "discs"), ("dot", "dots")),
    "square": (("square", "squares"), ("box", "boxes"), ("block", "blocks")),
    "triangle": (("triangle", "triangles"),),
    "star": (("star", "stars"),),
    "cross": (("cross", "crosses"), ("plus sign", "plus signs")),
}
"""Singular and plural nouns for each shape."""
GENERIC_NOUNS: tuple[tuple[str, str], ...] = (
    ("shape", "shapes"),
    ("object", "objects"),
    ("figure", "figures"),
    ("thing", "things"),
)
COLOUR_WORDS: dict[str, tuple[str, ...]] = {
    "red": ("red", "crimson", "scarlet"),
    "blue": ("blue", "azure", "cobalt"),
    "green": ("green", "emerald", "lime-green"),
    "yellow": ("yellow", "golden", "lemon-yellow"),
    "purple": ("purple", "violet"),
    "orange": ("orange", "tangerine"),
}


def _plural(phrase: str) -> str:
    """The plural of a singular verb phrase: "is moving" -> "are moving", "rolls" -> "roll"."""
    verb, _, rest = phrase.partition(" ")
    verb = {"is": "are", "does": "do"}.get(verb, verb.removesuffix("s"))
    return f"{verb} {rest}".rstrip()


MOTION_PHRASES: dict[str, tuple[tuple[str, str], ...]] = {
    motion: tuple((phrase, _plural(phrase)) for phrase in phrases)
    for motion, phrases in {
        "left": ("moves left", "slides to the left", "moves to the left", "drifts left"),
        "right": ("moves right", "slides to the right", "moves to the right", "drifts right"),
        "up": ("moves up", "rises", "floats upward", "drifts up"),
        "down": ("moves down", "sinks", "falls", "drops"),
        "spinning": ("spins", "rotates", "is spinning", "turns around"),
        "growing": ("grows", "gets bigger", "expands", "is growing"),
        "shrinking": ("shrinks", "gets smaller", "is shrinking"),
        "bouncing": ("bounces", "hops", "is bouncing", "bounces up and down"),
        "still": ("stays still", "does not move", "sits still", "is motionless"),
        MOVING: ("moves", "is moving", "is in motion"),
    }.items()
}
"""Singular and plural verb phrases for each motion (and for "any motion")."""
ROLL_PHRASES: dict[str, tuple[str, str]] = {
    side: (f"rolls to the {side}", f"roll to the {side}") for side in ("left", "right")
}
"""Extra phrases for a circle moving sideways: a ball rolls."""
BACKGROUND_PHRASES: dict[str, tuple[str, ...]] = {
    "plain": ("on a plain background", "against a plain backdrop", "on a blank background"),
    "stripes": ("on a striped background", "against stripes", "over a striped backdrop"),
    "grass": ("on grass", "on the grass", "on a grassy field", "over a lawn"),
}
NUMBER_WORDS: dict[int, str] = {2: "two", 3: "three"}


@dataclass(frozen=True)
class GeneratedCaption:
    """A caption's text, the assertion it makes and its specificity level."""

    text: str
    assertion: Assertion
    level: str


def _pick(rng: np.random.Generator, options: tuple | list):
    return options[int(rng.integers(len(options)))]


def _noun(rng: np.random.Generator, shape: str | None, plural: bool, lexicon: dict) -> str:
    """A noun for ``shape``; ``lexicon`` keeps one word per shape (and colour) within a
    caption, so "a box and a red box" never reads as two kinds ("a box and a red square")."""
    if shape not in lexicon:
        lexicon[shape] = _pick(rng, SHAPE_NOUNS[shape] if shape else GENERIC_NOUNS)
    return lexicon[shape][1 if plural else 0]


def _verb(rng: np.random.Generator, motion: str, shape: str | None, plural: bool) -> str:
    options = list(MOTION_PHRASES[motion])
    if shape == "circle" and motion in ROLL_PHRASES:
        options.append(ROLL_PHRASES[motion])
    return _pick(rng, options)[1 if plural else 0]


def _noun_phrase(
    rng: np.random.Generator, spec: ObjectSpec, lexicon: dict | None = None, another: bool = False
) -> str:
    """ "a crimson disc", "two red shapes", "another red disc" (``another``), or
    "something" for a spec that states a motion but no noun."""
    plural = spec.count is not None
    lexicon = {} if lexicon is None else lexicon
    words = []
    if spec.colour is not None:
        if ("colour", spec.colour) not in lexicon:
            lexicon["colour", spec.colour] = _pick(rng, COLOUR_WORDS[spec.colour])
        words.append(lexicon["colour", spec.colour])
    vague = spec.shape is None and spec.colour is None and spec.motion is not None
    if vague and not plural and not another and rng.random() < 0.4:
        return "something"
    words.append(_noun(rng, spec.shape, plural, lexicon))
    head = "an" if words[0][0] in "aeiou" else "a"
    if plural:
        head = NUMBER_WORDS[spec.count]
    elif another:
        head = "another"
    return " ".join([head, *words])


def _clause(
    rng: np.random.Generator, spec: ObjectSpec, lexicon: dict | None = None, another: bool = False
) -> str:
    """A noun phrase with its verb phrase when the spec states a motion."""
    noun_phrase = _noun_phrase(rng, spec, lexicon, another)
    if spec.motion is None:
        if spec.count is None and rng.random() < 0.25:
            return f"there is {noun_phrase}"
        return noun_phrase
    return f"{noun_phrase} {_verb(rng, spec.motion, spec.shape, spec.count is not None)}"


def _with_background(rng: np.random.Generator, text: str, background: str | None) -> str:
    if background is None:
        return text
    return f"{text} {_pick(rng, BACKGROUND_PHRASES[background])}"


def _generalised_motion(rng: np.random.Generator, motion: str, p: float) -> str:
    """The object's motion, or with probability ``p`` the vaguer "moving" if it moves."""
    return MOVING if motion != "still" and rng.random() < p else motion


def _single(rng: np.random.Generator, scene: Scene, n_attributes: int) -> GeneratedCaption:
    """One object described by ``n_attributes`` of shape, colour, motion and background."""
    obj: SceneObject = _pick(rng, scene.objects)
    chosen = set(rng.choice(4, size=n_attributes, replace=False).tolist())
    vague = {1: 0.5, 2: 0.3}.get(n_attributes, 0.0)
    spec = ObjectSpec(
        shape=obj.shape if 0 in chosen else None,
        colour=obj.colour if 1 in chosen else None,
        motion=_generalised_motion(rng, obj.motion, vague) if 2 in chosen else None,
    )
    background = scene.background.kind if 3 in chosen else None
    level = LEVELS[n_attributes - 1]  # generic, medium, specific, full
    text = _with_background(rng, _clause(rng, spec), background)
    return GeneratedCaption(text, Assertion(objects=(spec,), background=background), level)


def _relation(rng: np.random.Generator, scene: Scene) -> GeneratedCaption | None:
    """Two distinct objects: "X past Y", "X while Y" or "X and Y"."""
    if len(scene.objects) < 2:
        return None
    i, j = rng.choice(len(scene.objects), size=2, replace=False).tolist()
    x, y = scene.objects[i], scene.objects[j]
    relations = ["and", "while"]
    if x.motion in DIRECTIONAL_MOTIONS:
        relations.append("past")
    relation = _pick(rng, relations)
    same_shape = x.shape == y.shape
    if same_shape and x.colour == y.colour and relation == "and":
        return None  # "a red box and a red box" reads badly; "two red boxes" is a count.
    x_spec = ObjectSpec(
        shape=x.shape,
        colour=x.colour if same_shape or rng.random() < 0.7 else None,
        motion=x.motion if relation != "and" else None,
    )
    y_spec = ObjectSpec(
        shape=y.shape,
        colour=y.colour if same_shape or rng.random() < 0.6 else None,
        motion=_generalised_motion(rng, y.motion, 0.3) if relation == "while" else None,
    )
    lexicon: dict = {}
    another = (x_spec.shape, x_spec.colour) == (y_spec.shape, y_spec.colour)
    if relation == "past":
        y_text = _noun_phrase(rng, y_spec, lexicon, another)
        text = f"{_clause(rng, x_spec, lexicon)} past {y_text}"
    elif relation == "while":
        y_text = _clause(rng, y_spec, lexicon, another)
        text = f"{_clause(rng, x_spec, lexicon)} while {y_text}"
    else:
        text = f"{_noun_phrase(rng, x_spec, lexicon)} and {_noun_phrase(rng, y_spec, lexicon)}"
    background = scene.background.kind if rng.random() < 0.4 else None
    text = _with_background(rng, text, background)
    assertion = Assertion(objects=(x_spec, y_spec), background=background, relation=relation)
    return GeneratedCaption(text, assertion, "relation")


def _count(rng: np.random.Generator, scene: Scene) -> GeneratedCaption | None:
    """Exactly n objects of a kind: "two squares", "three shapes", "two red balls spin"."""
    candidates: list[ObjectSpec] = []
    for obj in scene.objects:
        for shape in (obj.shape, None):
            for colour in (obj.colour, None):
                vague = MOVING if obj.motion != "still" else obj.motion
                for motion in dict.fromkeys((obj.motion, vague, None)):
                    spec = ObjectSpec(shape=shape, colour=colour, motion=motion)
                    n = sum(spec.matches(o) for o in scene.objects)
                    if n >= 2:
                        candidates.append(ObjectSpec(shape, colour, motion, count=n))
    if not candidates:
        return None
    candidates = sorted(set(candidates), key=repr)
    spec = _pick(rng, candidates)
    background = scene.background.kind if rng.random() < 0.5 else None
    text = _with_background(rng, _clause(rng, spec), background)
    return GeneratedCaption(text, Assertion(objects=(spec,), background=background), "count")


def generate_caption(rng: np.random.Generator, scene: Scene, level: str) -> GeneratedCaption:
    """A caption of ``level`` for ``scene``; falls back to "full" where a level can't apply."""
    if level == "relation":
        caption = _relation(rng, scene)
    elif level == "count":
        caption = _count(rng, scene)
    else:
        caption = _single(rng, scene, LEVELS.index(level) + 1)
    if caption is None:
        caption = _single(rng, scene, 4)
    if not is_relevant(caption.assertion, scene):
        raise RuntimeError(f"grammar bug: {caption} is not true of its own scene")
    return caption


def _draw_level(rng: np.random.Generator, weights: dict[str, float]) -> str:
    levels = list(weights)
    p = np.array([weights[level] for level in levels])
    return levels[int(rng.choice(len(levels), p=p / p.sum()))]


def captions_for_scene(
    rng: np.random.Generator, scene: Scene, n: int, *, query: bool = False
) -> list[GeneratedCaption]:
    """Up to ``n`` captions with distinct texts; with ``query`` the first is drawn with the
    query level mix (it becomes the test video's query caption)."""
    captions: list[GeneratedCaption] = []
    texts: set[str] = set()
    for _attempt in range(20 * n):
        if len(captions) == n:
            break
        weights = QUERY_LEVEL_WEIGHTS if query and not captions else CAPTION_LEVEL_WEIGHTS
        caption = generate_caption(rng, scene, _draw_level(rng, weights))
        if caption.text not in texts:
            captions.append(caption)
            texts.add(caption.text)
    return captions
