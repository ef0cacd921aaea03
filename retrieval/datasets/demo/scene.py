"""Ground truth of the synthetic demo world: scenes (a background and one to three coloured
shapes, each with one motion), caption assertions and their exact relevance.

A caption is relevant to a video iff every element it mentions is present (FIRE §3.1): each
stated attribute of a spec matches (``"moving"``: any motion but ``"still"``), a counted
spec ("two squares") matches exactly that many objects, and all specs are met by distinct
objects ("X past Y": both present, X with its motion); a stated background must match.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

import numpy as np

SHAPES: tuple[str, ...] = ("circle", "square", "triangle", "star", "cross")
COLOURS: tuple[str, ...] = ("red", "blue", "green", "yellow", "purple", "orange")
MOTIONS: tuple[str, ...] = (
    "left", "right", "up", "down", "spinning", "growing", "shrinking", "bouncing", "still",
)  # fmt: skip
BACKGROUNDS: tuple[str, ...] = ("plain", "stripes", "grass")
STEPS: dict[str, tuple[int, int]] = dict(left=(-1, 0), right=(1, 0), up=(0, -1), down=(0, 1))
"""Each directional motion's direction in x and y (y points down)."""
DIRECTIONAL_MOTIONS: frozenset[str] = frozenset(STEPS)
MOVING = "moving"
"""Motion value an assertion may state meaning "any motion but still"."""
MAX_OBJECTS = 3

# Geometry, in units of the frame side (the frame is the unit square, y pointing down).
TRAVEL = 0.45
"""How far a left/right/up/down object travels over the clip."""
BOUNCE_HEIGHT = 0.25
BOUNCES = 2
SCALE_SMALL, SCALE_LARGE = 0.5, 1.5
"""Scale at the start and end of a growing object (reversed when shrinking)."""
SPIN_TURNS = 0.75
"""Turns a spinning object makes over the clip; with every shape's off-centre spot, no
orientation repeats, so a spinning circle never looks still."""
RADIUS_RANGE = (0.09, 0.13)
MIN_SEPARATION = 1.0
"""Centres stay at least this fraction of the summed radii apart, so none is hidden."""
_TRAJECTORY_SAMPLES = 31

BACKGROUND_COLOURS: tuple[tuple[int, int, int], ...] = (
    (38, 38, 46),
    (28, 34, 64),
    (62, 46, 38),
    (72, 72, 78),
    (20, 52, 56),
)
"""Dark, muted background colours that every object colour stands out against."""


@dataclass(frozen=True)
class SceneObject:
    """One shape in a scene; position and radius are fractions of the frame side."""

    shape: str
    colour: str
    motion: str
    x: float
    y: float
    radius: float
    angle: float = 0.0
    spin_direction: int = 1

    def state(self, u: float) -> tuple[float, float, float, float]:
        """Centre x, centre y, radius and angle (radians) at clip time ``u`` in [0, 1]."""
        x, y, scale, angle = self.x, self.y, 1.0, self.angle
        if self.motion in STEPS:
            step_x, step_y = STEPS[self.motion]
            x, y = x + step_x * TRAVEL * u, y + step_y * TRAVEL * u
        elif self.motion == "bouncing":
            y -= BOUNCE_HEIGHT * abs(math.sin(math.pi * BOUNCES * u))
        elif self.motion == "growing":
            scale = SCALE_SMALL + (SCALE_LARGE - SCALE_SMALL) * u
        elif self.motion == "shrinking":
            scale = SCALE_LARGE - (SCALE_LARGE - SCALE_SMALL) * u
        elif self.motion == "spinning":
            angle += self.spin_direction * 2 * math.pi * SPIN_TURNS * u
        return x, y, self.radius * scale, angle


@dataclass(frozen=True)
class Background:
    """The backdrop: a kind (plain, stripes, grass) and the colours it is drawn with."""

    kind: str
    colour: tuple[int, int, int]
    colour2: tuple[int, int, int] | None = None
    stripe_width: float = 0.0
    stripe_angle: float = 0.0


@dataclass(frozen=True)
class Scene:
    """What a demo video shows; ``seed`` fixes the texture noise of the rendering."""

    background: Background
    objects: tuple[SceneObject, ...]
    seed: int = 0

    def to_dict(self) -> dict:
        """Its fields as JSON reads them back, tuples as lists (``Video.metadata["scene"]``)."""
        return json.loads(json.dumps(asdict(self)))

    @classmethod
    def from_dict(cls, data: dict) -> Scene:
        """Inverse of :meth:`to_dict`."""
        bg = dict(data["background"])
        bg["colour"] = tuple(bg["colour"])
        if bg.get("colour2") is not None:
            bg["colour2"] = tuple(bg["colour2"])
        return cls(
            background=Background(**bg),
            objects=tuple(SceneObject(**obj) for obj in data["objects"]),
            seed=int(data.get("seed", 0)),
        )


@dataclass(frozen=True)
class ObjectSpec:
    """What a caption says about one object (or, with ``count``, a group of objects)."""

    shape: str | None = None
    colour: str | None = None
    motion: str | None = None
    count: int | None = None

    def matches(self, obj: SceneObject) -> bool:
        """True when ``obj`` has every attribute this spec states."""
        if self.shape is not None and obj.shape != self.shape:
            return False
        if self.colour is not None and obj.colour != self.colour:
            return False
        if self.motion == MOVING:
            return obj.motion != "still"
        return self.motion is None or obj.motion == self.motion


@dataclass(frozen=True)
class Assertion:
    """Everything a caption asserts: object specs, their relation and the background."""

    objects: tuple[ObjectSpec, ...]
    background: str | None = None
    relation: str | None = None

    def to_dict(self) -> dict:
        """Its fields as JSON reads them back (``Caption.metadata["assertion"]``)."""
        return json.loads(json.dumps(asdict(self)))

    @classmethod
    def from_dict(cls, data: dict) -> Assertion:
        """Inverse of :meth:`to_dict`."""
        return cls(
            objects=tuple(ObjectSpec(**spec) for spec in data["objects"]),
            background=data.get("background"),
            relation=data.get("relation"),
        )

    def key(self) -> str:
        """A canonical string: equal for assertions with the same truth conditions."""
        specs = sorted(json.dumps(asdict(spec), sort_keys=True) for spec in self.objects)
        return json.dumps({"o": specs, "b": self.background})


def _slots(assertion: Assertion) -> list[ObjectSpec]:
    """One entry per object the assertion needs: a counted spec needs ``count`` objects."""
    return [spec for spec in assertion.objects for _ in range(spec.count or 1)]


def is_relevant(assertion: Assertion, scene: Scene) -> bool:
    """True iff every element of ``assertion`` is present in ``scene`` (FIRE §3.1; module doc)."""
    if assertion.background is not None and assertion.background != scene.background.kind:
        return False
    for spec in assertion.objects:
        if spec.count is not None and sum(spec.matches(o) for o in scene.objects) != spec.count:
            return False
    slots = _slots(assertion)
    if len(slots) > len(scene.objects):
        return False
    return any(
        all(spec.matches(scene.objects[i]) for spec, i in zip(slots, chosen, strict=True))
        for chosen in itertools.permutations(range(len(scene.objects)), len(slots))
    )


@dataclass
class _SceneArrays:
    """Scenes encoded as integer arrays (-1 marks an absent object slot)."""

    shape: np.ndarray
    colour: np.ndarray
    motion: np.ndarray
    background: np.ndarray
    spec_masks: dict[ObjectSpec, np.ndarray] = field(default_factory=dict)

    @classmethod
    def encode(cls, scenes: Sequence[Scene]) -> _SceneArrays:
        width = max([MAX_OBJECTS, *(len(s.objects) for s in scenes)])
        codes = np.full((3, len(scenes), width), -1, dtype=np.int8)  # shape, colour, motion
        for v, scene in enumerate(scenes):
            for k, obj in enumerate(scene.objects):
                codes[:, v, k] = (
                    SHAPES.index(obj.shape),
                    COLOURS.index(obj.colour),
                    MOTIONS.index(obj.motion),
                )
        kinds = [BACKGROUNDS.index(scene.background.kind) for scene in scenes]
        return cls(*codes, np.array(kinds, dtype=np.int8))

    def matches(self, spec: ObjectSpec) -> np.ndarray:
        """Videos x object slots: which objects match ``spec`` (cached per spec)."""
        key = ObjectSpec(spec.shape, spec.colour, spec.motion)
        cached = self.spec_masks.get(key)
        if cached is not None:
            return cached
        mask = self.shape >= 0
        if spec.shape is not None:
            mask = mask & (self.shape == _index(SHAPES, spec.shape))
        if spec.colour is not None:
            mask = mask & (self.colour == _index(COLOURS, spec.colour))
        if spec.motion == MOVING:
            mask = mask & (self.motion != MOTIONS.index("still"))
        elif spec.motion is not None:
            mask = mask & (self.motion == _index(MOTIONS, spec.motion))
        self.spec_masks[key] = mask
        return mask


def _index(values: tuple[str, ...], value: str) -> int:
    """Position of ``value``, or -2 (matches nothing) for an unknown value."""
    return values.index(value) if value in values else -2


def _relevance_row(assertion: Assertion, arrays: _SceneArrays) -> np.ndarray:
    """Relevance of one assertion to every encoded scene, as :func:`is_relevant` defines."""
    n, width = arrays.shape.shape
    ok = np.ones(n, dtype=bool)
    if assertion.background is not None:
        ok &= arrays.background == _index(BACKGROUNDS, assertion.background)
    for spec in assertion.objects:
        if spec.count is not None:
            ok &= arrays.matches(spec).sum(axis=1) == spec.count
    slots = [arrays.matches(spec) for spec in _slots(assertion)]
    if len(slots) > width:
        return np.zeros(n, dtype=bool)
    assigned = np.zeros(n, dtype=bool)
    for chosen in itertools.permutations(range(width), len(slots)):
        hit = np.ones(n, dtype=bool)
        for mask, i in zip(slots, chosen, strict=True):
            hit &= mask[:, i]
        assigned |= hit
    return ok & assigned


def relevance_matrix(assertions: Sequence[Assertion], scenes: Sequence[Scene]) -> np.ndarray:
    """Captions x videos boolean matrix of exact relevance, as :func:`is_relevant` (each
    distinct assertion evaluated once over the scenes encoded as arrays)."""
    arrays = _SceneArrays.encode(scenes)
    out = np.zeros((len(assertions), len(scenes)), dtype=bool)
    rows: dict[str, np.ndarray] = {}
    for c, assertion in enumerate(assertions):
        key = assertion.key()
        row = rows.get(key)
        if row is None:
            row = rows[key] = _relevance_row(assertion, arrays)
        out[c] = row
    return out


def _start_ranges(motion: str, radius: float) -> tuple[tuple[float, float], tuple[float, float]]:
    """Ranges for the start centre that keep the whole trajectory inside the frame."""
    extent = radius * (SCALE_LARGE if motion in {"growing", "shrinking"} else 1.0) + 0.02
    lo, hi = extent, 1.0 - extent
    left, right, top, bottom = _ROOM_TO_MOVE.get(motion, (0.0, 0.0, 0.0, 0.0))
    return (lo + left, hi - right), (lo + top, hi - bottom)


_ROOM_TO_MOVE = {
    "left": (TRAVEL, 0.0, 0.0, 0.0),
    "right": (0.0, TRAVEL, 0.0, 0.0),
    "up": (0.0, 0.0, TRAVEL, 0.0),
    "down": (0.0, 0.0, 0.0, TRAVEL),
    "bouncing": (0.0, 0.0, BOUNCE_HEIGHT, 0.0),
}
"""Room a motion needs beyond the start centre's range: (left, right, top, bottom)."""


def _trajectory(obj: SceneObject) -> np.ndarray:
    """Samples x samples of (x, y, radius) along the clip."""
    return np.array(
        [obj.state(u)[:3] for u in np.linspace(0.0, 1.0, _TRAJECTORY_SAMPLES)], dtype=float
    )


def _separated(a: np.ndarray, b: np.ndarray) -> bool:
    """True when two trajectories never come close enough for one to hide the other."""
    distance = np.hypot(a[:, 0] - b[:, 0], a[:, 1] - b[:, 1])
    return bool(np.all(distance >= MIN_SEPARATION * (a[:, 2] + b[:, 2])))


def _sample_object(
    rng: np.random.Generator, background: str, like: SceneObject | None
) -> SceneObject:
    """Draw one object; a distractor often repeats the first object's shape or colour."""
    if like is not None and rng.random() < 0.4:
        shape = like.shape
    else:
        shape = SHAPES[rng.integers(len(SHAPES))]
    # Green shapes are not put on grass, where they would be hard to see.
    colours = [c for c in COLOURS if not (c == "green" and background == "grass")]
    if like is not None and rng.random() < 0.3:
        colour = like.colour
    else:
        colour = colours[rng.integers(len(colours))]
    motion = MOTIONS[rng.integers(len(MOTIONS))]
    radius = float(rng.uniform(*RADIUS_RANGE))
    (x0, x1), (y0, y1) = _start_ranges(motion, radius)
    return SceneObject(
        shape=shape,
        colour=colour,
        motion=motion,
        x=round(float(rng.uniform(x0, x1)), 4),
        y=round(float(rng.uniform(y0, y1)), 4),
        radius=round(radius, 4),
        angle=round(float(rng.uniform(0, 2 * math.pi)), 4),
        spin_direction=int(rng.choice((-1, 1))),
    )


def _sample_background(rng: np.random.Generator) -> Background:
    kind = BACKGROUNDS[rng.integers(len(BACKGROUNDS))]
    if kind == "plain":
        colour = BACKGROUND_COLOURS[rng.integers(len(BACKGROUND_COLOURS))]
        return Background(kind=kind, colour=colour)
    if kind == "stripes":
        first, second = rng.choice(len(BACKGROUND_COLOURS), size=2, replace=False)
        return Background(
            kind=kind,
            colour=BACKGROUND_COLOURS[first],
            colour2=tuple(min(255, c + 45) for c in BACKGROUND_COLOURS[second]),
            stripe_width=round(float(rng.uniform(0.06, 0.12)), 4),
            stripe_angle=float(rng.choice((0.0, 45.0, 90.0, 135.0))),
        )
    return Background(kind=kind, colour=(46, 104, 34), colour2=(78, 150, 52))


def sample_scene(rng: np.random.Generator) -> Scene:
    """Draw a random scene: a background and 1-3 objects that never hide one another
    (a distractor that cannot be placed so after a few tries is dropped)."""
    background = _sample_background(rng)
    n_objects = int(rng.choice((1, 2, 3), p=(0.35, 0.4, 0.25)))
    objects: list[SceneObject] = []
    paths: list[np.ndarray] = []
    for _ in range(n_objects):
        for _attempt in range(30):
            obj = _sample_object(rng, background.kind, objects[0] if objects else None)
            path = _trajectory(obj)
            if all(_separated(path, other) for other in paths):
                objects.append(obj)
                paths.append(path)
                break
    return Scene(background=background, objects=tuple(objects), seed=int(rng.integers(2**31 - 1)))
