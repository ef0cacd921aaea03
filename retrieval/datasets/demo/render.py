"""Draw demo scenes as frames and encode them as WebM (VP9) clips that browsers play: 30
frames at 12 fps, 128 x 128 pixels (every motion visible, hundreds built in seconds), shapes
supersampled, textures from the scene's seed, so a scene always renders to the same bytes."""

from __future__ import annotations

import math
from pathlib import Path

import av
import numpy as np

from .scene import Background, Scene, SceneObject

FPS = 12
N_FRAMES = 30
SIZE = 128
DURATION = N_FRAMES / FPS
SUPERSAMPLE = 3

OBJECT_RGB: dict[str, tuple[int, int, int]] = {
    "red": (225, 35, 35),
    "blue": (60, 120, 255),
    "green": (50, 215, 60),
    "yellow": (250, 225, 40),
    "purple": (170, 70, 225),
    "orange": (255, 140, 20),
}
"""Saturated colours that read as their names and stand out on the dark backgrounds."""
SPOT_CENTRE, SPOT_RADIUS, SPOT_SHADE = (0.0, -0.45), 0.2, 0.45
"""A darker spot off the centre of every shape (object units) that makes rotation visible
even for symmetric shapes such as circles and squares."""


def _polygon(radii: list[float], start: float = -math.pi / 2) -> np.ndarray:
    """Vertices of a star-shaped polygon with the given radii at equal angle steps."""
    angles = start + 2 * math.pi * np.arange(len(radii)) / len(radii)
    return np.stack([np.cos(angles), np.sin(angles)], axis=1) * np.array(radii)[:, None]


def _cross(half_width: float = 0.32, arm: float = 0.95) -> np.ndarray:
    w, a = half_width, arm
    return np.array(
        [(w, -a), (w, -w), (a, -w), (a, w), (w, w), (w, a)]
        + [(-w, a), (-w, w), (-a, w), (-a, -w), (-w, -w), (-w, -a)]
    )


POLYGONS: dict[str, np.ndarray] = {
    "square": _polygon([1.1] * 4, start=-math.pi / 4),
    "triangle": _polygon([1.2] * 3),
    "star": _polygon([1.2, 0.5] * 5),
    "cross": _cross(),
}
"""Shape outlines in units of the object's radius, at angle 0 (y points down)."""


def _inside_polygon(u: np.ndarray, v: np.ndarray, vertices: np.ndarray) -> np.ndarray:
    """Even-odd point-in-polygon test, vectorised over points."""
    inside = np.zeros(u.shape, dtype=bool)
    x1, y1 = vertices[:, 0], vertices[:, 1]
    x2, y2 = np.roll(x1, -1), np.roll(y1, -1)
    for a, b, c, d in zip(x1, y1, x2, y2, strict=True):
        if b == d:
            continue
        crosses = (b > v) != (d > v)
        inside ^= crosses & (u < (c - a) * (v - b) / (d - b) + a)
    return inside


def _shape_mask(shape: str, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Which points (in object units, already un-rotated) lie inside ``shape``."""
    if shape == "circle":
        return u * u + v * v <= 1.0
    return _inside_polygon(u, v, POLYGONS[shape])


def _extent(shape: str) -> float:
    """Furthest point of a shape from its centre, in units of its radius."""
    if shape == "circle":
        return 1.0
    return float(np.hypot(POLYGONS[shape][:, 0], POLYGONS[shape][:, 1]).max())


def draw_background(background: Background, size: int, seed: int) -> np.ndarray:
    """The static backdrop as float RGB (size x size x 3)."""
    colour = np.array(background.colour, dtype=np.float32)
    if background.kind == "plain":
        return np.broadcast_to(colour, (size, size, 3)).copy()
    y, x = np.mgrid[0:size, 0:size].astype(np.float32) / size
    if background.kind == "stripes":
        theta = math.radians(background.stripe_angle)
        phase = (x * math.cos(theta) + y * math.sin(theta)) / background.stripe_width
        second = (np.floor(phase).astype(int) % 2 == 1)[..., None]
        colour2 = np.array(background.colour2, dtype=np.float32)
        return np.where(second, colour2, colour).astype(np.float32)
    # Grass: blades are noise stretched vertically, over a patchy low-frequency field.
    rng = np.random.default_rng(seed)
    blades = rng.random((size // 8, size))
    blades = np.repeat(blades, 8, axis=0)[:size]
    blades = blades * 0.7 + 0.3 * np.roll(blades, 1, axis=1)
    patches = rng.random((size // 32 + 1, size // 32 + 1))
    patches = np.kron(patches, np.ones((32, 32)))[:size, :size]
    mix = np.clip(0.65 * blades + 0.35 * patches, 0, 1)[..., None]
    light = np.array(background.colour2, dtype=np.float32)
    return (colour * (1 - mix) + light * mix).astype(np.float32)


def draw_object(frame: np.ndarray, obj: SceneObject, u: float) -> None:
    """Blend ``obj`` at clip time ``u`` into ``frame`` (float RGB), anti-aliased."""
    size = frame.shape[0]
    cx, cy, radius, angle = obj.state(u)
    cx, cy, radius = cx * size, cy * size, radius * size
    reach = radius * _extent(obj.shape) + 1
    x0, x1 = max(0, int(cx - reach)), min(size, int(math.ceil(cx + reach)))
    y0, y1 = max(0, int(cy - reach)), min(size, int(math.ceil(cy + reach)))
    if x0 >= x1 or y0 >= y1:
        return
    s = SUPERSAMPLE
    sub = (np.arange(s) + 0.5) / s
    xs = (np.arange(x0, x1)[:, None] + sub[None, :]).ravel() - cx
    ys = (np.arange(y0, y1)[:, None] + sub[None, :]).ravel() - cy
    dx, dy = np.meshgrid(xs, ys)
    cos, sin = math.cos(-angle), math.sin(-angle)
    u_obj = (dx * cos - dy * sin) / radius
    v_obj = (dx * sin + dy * cos) / radius
    inside = _shape_mask(obj.shape, u_obj, v_obj)
    spot = inside & (
        (u_obj - SPOT_CENTRE[0]) ** 2 + (v_obj - SPOT_CENTRE[1]) ** 2 <= SPOT_RADIUS**2
    )
    shape = (y1 - y0, s, x1 - x0, s)
    alpha = inside.reshape(shape).mean(axis=(1, 3))[..., None]
    spot_alpha = spot.reshape(shape).mean(axis=(1, 3))[..., None]
    rgb = np.array(OBJECT_RGB[obj.colour], dtype=np.float32)
    region = frame[y0:y1, x0:x1]
    region = region * (1 - alpha) + rgb * alpha
    frame[y0:y1, x0:x1] = region * (1 - spot_alpha) + rgb * SPOT_SHADE * spot_alpha


def render_frames(scene: Scene, seed: int | None = None, size: int = SIZE) -> np.ndarray:
    """The clip as uint8 frames (N_FRAMES x size x size x 3); ``seed`` defaults to the
    scene's own, which fixes the background texture."""
    background = draw_background(scene.background, size, scene.seed if seed is None else seed)
    frames = np.empty((N_FRAMES, size, size, 3), dtype=np.uint8)
    for t in range(N_FRAMES):
        frame = background.copy()
        u = t / (N_FRAMES - 1)
        for obj in scene.objects:
            draw_object(frame, obj, u)
        frames[t] = np.clip(np.rint(frame), 0, 255).astype(np.uint8)
    return frames


def write_webm(frames: np.ndarray, path: str | Path, fps: int = FPS) -> None:
    """Encode uint8 RGB frames as a VP9 WebM file (yuv420p, which Chromium plays), at
    realtime speed, with one thread and bit-exact muxing so the bytes are reproducible."""
    _, height, width, _ = frames.shape
    with av.open(str(path), "w", format="webm", options={"fflags": "+bitexact"}) as container:
        stream = container.add_stream(
            "libvpx-vp9",
            rate=fps,
            options={
                "deadline": "realtime",
                "cpu-used": "8",
                "crf": "30",
                "b": "0",
                "threads": "1",
            },
        )
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        for array in frames:
            frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(array), format="rgb24")
            container.mux(stream.encode(frame))
        container.mux(stream.encode(None))


def render_scene_file(job: tuple[dict, str]) -> str:
    """Render a scene (as its dict) to a WebM file; a picklable job for a process pool."""
    scene_dict, path = job
    write_webm(render_frames(Scene.from_dict(scene_dict)), path)
    return path
