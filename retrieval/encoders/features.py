"""Deterministic hand-made video features: colour, shape and motion statistics in torch.

They stand in for the pre-extracted TSN features of JPoSE (Wray et al., ICCV 2019, §4.1.1)
and MME (Wray et al., CVPR 2021, §5): a clip of ``N_FRAMES`` x ``SIZE`` x ``SIZE`` RGB gives one
float32 vector of :data:`FEATURE_NAMES` (per hue bin presence, trajectory, shape moments and
spin; their area-weighted pool; a colour histogram; background texture; global motion), with
no learned weights. :func:`extract_experts` keeps time and regions apart instead (Zhu, Bresson
& Lim's appearance, action and object experts), from pixels only.
"""

from __future__ import annotations

import math
import multiprocessing
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import av
import numpy as np
import torch
import torch.nn.functional as F

N_FRAMES = 16
SIZE = 128
BIN_SIZE = 64
"""Side at which the per-hue-bin masks are analysed (texture uses the full ``SIZE``)."""
HUE_BINS = 12
HUE_WIDTH = 2 * math.pi / HUE_BINS
VIVID_SATURATION, VIVID_VALUE = 0.4, 0.7
"""Soft thresholds above which a pixel counts as a vivid (object-like) colour."""
GATE_SOFTNESS = 0.04
PRESENT_AREA = 0.003
"""Mean area fraction at which a hue bin counts as fully present (about 50 pixels)."""
EDGE_FRAMES = 3
"""Frames averaged for the "start" and "end" of a clip."""

BIN_FEATURES: tuple[str, ...] = tuple(
    "area area_start area_end log_growth dx dy excess_path_y excess_path_x compactness "
    "radial_kurtosis eccentricity symmetry3 symmetry4 symmetry5 bbox_fill detail_turn "
    "detail_jitter moment_turn mask_change".split()
)
HIST_CLASSES: tuple[str, ...] = ("vivid", "dim", "muted")
GREY_LEVELS = 4
TEXTURE_NAMES: tuple[str, ...] = tuple(
    "grad_mean grad_strong grad_weak grad_coherence grad_cos2 grad_sin2 laplacian luma_std "
    "bg_hue_cos bg_hue_sin bg_saturation bg_value bg_flicker bg_fraction".split()
)
MOTION_NAMES: tuple[str, ...] = ("luma_change", "changed_fraction")
HIST_NAMES: tuple[str, ...] = (
    *(f"hist_{cls}_{b:02d}" for cls in HIST_CLASSES for b in range(HUE_BINS)),
    *(f"hist_grey_{g}" for g in range(GREY_LEVELS)),
)
FEATURE_NAMES: tuple[str, ...] = (
    *(f"bin{b:02d}_{name}" for b in range(HUE_BINS) for name in BIN_FEATURES),
    *(f"pooled_{name}" for name in BIN_FEATURES),
    *HIST_NAMES,
    *(f"tex_{name}" for name in TEXTURE_NAMES),
    *(f"motion_{name}" for name in MOTION_NAMES),
)
FEATURE_DIM = len(FEATURE_NAMES)

_EPS = 1e-6


def sample_indices(n_available: int, n: int = N_FRAMES) -> np.ndarray:
    """``n`` frame indices spread uniformly over ``n_available`` frames (repeats if short)."""
    if n_available < 1:
        raise ValueError("a video needs at least one frame")
    return np.rint(np.linspace(0, n_available - 1, n)).astype(np.int64)


Span = tuple[float | None, float | None]
"""A segment of a file, [start, end] seconds (None: from the beginning, to the end)."""


def decode_frames(
    path: str | Path, n: int = N_FRAMES, size: int = SIZE, span: Span | None = None
) -> np.ndarray:
    """``n`` uniformly spaced frames of a video (of its segment ``span``: :func:`decode_span`)
    as uint8 RGB n x size x size x 3, scaled by FFmpeg's swscale (bit-exact per build)."""
    if span is not None and (span[0] is not None or span[1] is not None):
        return decode_span(path, span, n, size)
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        total = stream.frames
        frames: list[np.ndarray] = []
        if total and total > 0:
            wanted = sample_indices(total, n)
            keep = set(wanted.tolist())
            decoded: dict[int, np.ndarray] = {}
            for i, frame in enumerate(container.decode(stream)):
                if i in keep:
                    decoded[i] = _rgb(frame, size)
                if i >= wanted[-1]:
                    break
            if decoded:
                last = decoded[max(decoded)]
                frames = [decoded.get(int(i), last) for i in wanted]
        if not frames:
            container.seek(0)
            everything = [_rgb(frame, size) for frame in container.decode(stream)]
            if not everything:
                raise ValueError(f"no video frames in {path}")
            frames = [everything[int(i)] for i in sample_indices(len(everything), n)]
    return np.stack(frames)


def span_times(start: float, end: float, n: int = N_FRAMES) -> np.ndarray:
    """``n`` instants spread uniformly over [start, end): the middles of ``n`` equal parts."""
    return start + (np.arange(n) + 0.5) * (end - start) / n


def decode_span(path: str | Path, span: Span, n: int = N_FRAMES, size: int = SIZE) -> np.ndarray:
    """``n`` frames of the segment ``span`` of a video (n x size x size x 3 uint8 RGB): for
    each of :func:`span_times`, the frame showing then. Decoding starts at the keyframe
    before the span and stops at its end; only the chosen frames are converted."""
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        stated = container.duration / av.time_base if container.duration else math.inf
        start = max(0.0, span[0] or 0.0)
        end = span[1] if span[1] is not None else stated
        if not end > start:
            raise ValueError(f"empty segment {start:g}-{end:g} s in {path}")
        times = span_times(start, end, n) if math.isfinite(end) else None
        if start > 0 and stream.time_base:
            container.seek(int(start / stream.time_base), stream=stream, backward=True)
        chosen: list[np.ndarray | None] = [None] * n
        previous = None
        index = 0
        kept: list = []  # frames of a span without a known end: sampled afterwards
        for frame in container.decode(stream):
            when = frame.time if frame.time is not None else start
            if when >= end:
                break
            if times is None:
                if when >= start:
                    kept.append(_rgb(frame, size))
                continue
            while index < n and times[index] < when:
                chosen[index] = _rgb(previous, size)
                index += 1
            previous = frame
        if times is None:
            if not kept:
                raise ValueError(f"no video frames in {path} after {start:g} s")
            return np.stack([kept[int(i)] for i in sample_indices(len(kept), n)])
        while index < n:
            chosen[index] = _rgb(previous, size)
            index += 1
        if previous is None:
            raise ValueError(f"no video frames in {path} between {start:g} and {end:g} s")
        first = next(frame for frame in chosen if frame is not None)
        return np.stack([frame if frame is not None else first for frame in chosen])


def _rgb(frame, size: int) -> np.ndarray | None:
    return None if frame is None else frame.to_ndarray(format="rgb24", width=size, height=size)


def prepare_frames(frames: torch.Tensor, n: int = N_FRAMES, size: int = SIZE) -> torch.Tensor:
    """Clips [B, T, H, W, 3] (uint8, or float in [0, 1]) -> float [B, n, 3, size, size]."""
    if frames.ndim != 5 or frames.shape[-1] != 3:
        raise ValueError(f"expected frames of shape [B, T, H, W, 3], got {tuple(frames.shape)}")
    x = frames.float() / 255.0 if frames.dtype == torch.uint8 else frames.float()
    if x.shape[1] != n:
        index = torch.as_tensor(sample_indices(x.shape[1], n), device=x.device)
        x = x.index_select(1, index)
    b = x.shape[0]
    x = x.permute(0, 1, 4, 2, 3).reshape(b * n, 3, x.shape[2], x.shape[3])
    if x.shape[-2:] != (size, size):
        x = F.interpolate(x, size=(size, size), mode="area")
    return x.reshape(b, n, 3, size, size).clamp(0.0, 1.0)


def _hsv(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Hue angle (radians, opponent-colour form), saturation and value of RGB [..., 3, H, W]."""
    r, g, b = x.unbind(-3)
    value = torch.maximum(torch.maximum(r, g), b)
    chroma = value - torch.minimum(torch.minimum(r, g), b)
    saturation = chroma / value.clamp_min(_EPS)
    hue = torch.atan2(math.sqrt(3.0) * (g - b), 2 * r - g - b)
    return hue, saturation, value


def _hue_response(
    hue: torch.Tensor, weight: torch.Tensor, *, width: float = HUE_WIDTH
) -> torch.Tensor:
    """``weight`` spread over ``HUE_BINS`` hue bins, [..., H, W] -> [..., K, H, W]: membership
    max(0, cos(hue - c) - cos(width)), 1 at the centre c, in one small matrix product."""
    centres = torch.arange(HUE_BINS, device=hue.device, dtype=hue.dtype) * HUE_WIDTH
    scale = 1.0 / (1.0 - math.cos(width))
    basis = torch.stack(
        [
            torch.cos(centres) * scale,
            torch.sin(centres) * scale,
            centres.new_full((HUE_BINS,), -math.cos(width) * scale),
        ]
    )  # [3, K]
    vec = torch.stack([weight * torch.cos(hue), weight * torch.sin(hue), weight], dim=-1)
    out = torch.relu(vec @ basis)  # [..., H, W, K]
    return out.movedim(-1, -3)


def _gate(x: torch.Tensor, threshold: float) -> torch.Tensor:
    return torch.sigmoid((x - threshold) / GATE_SOFTNESS)


def _wrap(angle: torch.Tensor) -> torch.Tensor:
    return torch.remainder(angle + math.pi, 2 * math.pi) - math.pi


def _edges(values: torch.Tensor, weights: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Weighted means of ``values`` [..., T] over the first and last ``EDGE_FRAMES`` frames."""
    k = EDGE_FRAMES
    start = (values[..., :k] * weights[..., :k]).sum(-1) / weights[..., :k].sum(-1).clamp_min(_EPS)
    end = (values[..., -k:] * weights[..., -k:]).sum(-1) / weights[..., -k:].sum(-1).clamp_min(_EPS)
    return start, end


def _centred_powers(coords: torch.Tensor, centre: torch.Tensor, order: int) -> torch.Tensor:
    """(coords - centre) ** a for a = 0..order: coords [L], centre [N] -> [N, L, order + 1]."""
    d = coords.view(1, -1) - centre.view(-1, 1)
    return torch.stack([d**a for a in range(order + 1)], dim=-1)


def _complex_moment(mu: torch.Tensor, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Real and imaginary parts of sum M (x + iy)^n from central moments mu[..., y-power, x-power]."""
    parts = [torch.zeros_like(mu[..., 0, 0])] * 2
    for a in range(n + 1):
        k = (n - a) % 4  # the power of i: 1, i, -1, -i
        parts[k % 2] = parts[k % 2] + (1 - 2 * (k // 2)) * math.comb(n, a) * mu[..., n - a, a]
    return parts[0], parts[1]


def _window(coords: torch.Tensor, centre: torch.Tensor, half: torch.Tensor) -> torch.Tensor:
    """Soft box window |coords - centre| < half: coords [L], centre, half [N] -> [N, L]."""
    d = (coords.view(1, -1) - centre.view(-1, 1)).abs()
    return torch.sigmoid((half.view(-1, 1) - d) / 0.02)


def _moments(
    flat: torch.Tensor, xs: torch.Tensor, ys: torch.Tensor, cx, cy, wx, wy, order: int
) -> torch.Tensor:
    """Windowed central moments E[y^b x^a] (a, b <= order) of masks [N, H, W] -> [N, o+1, o+1],
    in two batched matrix products (the window wx [N, W], wy [N, H] is separable)."""
    px = _centred_powers(xs, cx, order) * wx.unsqueeze(-1)  # [N, W, o+1]
    py = _centred_powers(ys, cy, order) * wy.unsqueeze(-1)  # [N, H, o+1]
    raw = torch.bmm(py.transpose(1, 2), torch.bmm(flat, px))
    return raw / raw[:, :1, :1].clamp_min(_EPS)


def _bin_features(vivid: torch.Tensor, detail_pixels: torch.Tensor) -> torch.Tensor:
    """Per-bin shape and motion statistics of soft masks [B, T, K, H, W] -> [B, K, len(BIN_FEATURES)],
    moments taken in a box of 2.5 standard deviations so that stray pixels cannot dominate."""
    b, t, k, h, w = vivid.shape
    dev, dt = vivid.device, vivid.dtype
    n = b * t * k
    flat = vivid.reshape(n, h, w)
    ys = (torch.arange(h, device=dev, dtype=dt) + 0.5) / h
    xs = (torch.arange(w, device=dev, dtype=dt) + 0.5) / w
    col, row = flat.sum(1), flat.sum(2)  # [N, W], [N, H]
    mass = col.sum(1)
    denom = mass.clamp_min(_EPS)
    cx, cy = (col @ xs) / denom, (row @ ys) / denom
    spread = ((col @ xs**2) / denom - cx**2 + (row @ ys**2) / denom - cy**2).clamp_min(1e-5)
    for _ in range(2):  # refine centroid and spread inside the window
        half = 2.5 * spread.sqrt()
        wx, wy = _window(xs, cx, half), _window(ys, cy, half)
        mu = _moments(flat, xs, ys, cx, cy, wx, wy, 2)
        cx, cy = cx + mu[:, 0, 1], cy + mu[:, 1, 0]
        spread = (mu[:, 0, 2] + mu[:, 2, 0] - mu[:, 0, 1] ** 2 - mu[:, 1, 0] ** 2).clamp_min(1e-5)
    half = 2.5 * spread.sqrt()
    wx, wy = _window(xs, cx, half), _window(ys, cy, half)
    mu = _moments(flat, xs, ys, cx, cy, wx, wy, 5)
    inside = torch.bmm(wy.unsqueeze(1), torch.bmm(flat, wx.unsqueeze(-1))).view(n)
    spread = (mu[:, 2, 0] + mu[:, 0, 2]).clamp_min(1e-5)
    area = inside / (h * w)
    c20 = torch.stack(_complex_moment(mu, 2), -1).norm(dim=-1)
    compact_f = area / (2 * math.pi * spread)
    kurt_f = (mu[:, 4, 0] + 2 * mu[:, 2, 2] + mu[:, 0, 4]) / (spread * spread)
    ecc_f = c20 / spread
    sym_f = []
    phase: list[tuple[torch.Tensor, torch.Tensor]] = []
    for order in (2, 3, 4, 5):
        re, im = _complex_moment(mu, order)
        magnitude = torch.sqrt(re * re + im * im) / spread ** (order / 2)
        if order > 2:
            sym_f.append(magnitude)
        phase.append((torch.atan2(im, re) / order, magnitude))

    # Darker same-hue detail near the bin's centroid (a spot, shading, a hole): the
    # direction from the vivid centroid to the detail's centroid turns when the object spins.
    dmu = _moments(detail_pixels.reshape(n, h, w), xs, ys, cx, cy, wx, wy, 1)
    dmass = torch.bmm(wy.unsqueeze(1), torch.bmm(detail_pixels.reshape(n, h, w), wx.unsqueeze(-1)))
    ux, uy = dmu[:, 0, 1], dmu[:, 1, 0]

    def per_video(v: torch.Tensor) -> torch.Tensor:
        return v.reshape(b, t, k)

    mass, area, cx, cy = per_video(mass), per_video(area), per_video(cx), per_video(cy)
    present = (area / PRESENT_AREA).clamp(0.0, 1.0)
    frame_w = present + _EPS

    def over_time(v: torch.Tensor) -> torch.Tensor:
        return (per_video(v) * frame_w).sum(1) / frame_w.sum(1)

    fill = _box_fill(flat, wx, wy)

    pair_w = torch.minimum(present[:, 1:], present[:, :-1])  # [B, T-1, K]
    (a_start, a_end), (x_start, x_end), (y_start, y_end) = (
        _edges(v.transpose(1, 2), frame_w.transpose(1, 2)) for v in (area, cx, cy)
    )
    path_x, path_y = ((v.diff(dim=1).abs() * pair_w).sum(1) for v in (cx, cy))

    dshare = per_video(dmass.view(n) / (h * w) / (0.1 * PRESENT_AREA)).clamp(0.0, 1.0)
    offset = per_video(torch.sqrt(ux * ux + uy * uy) / spread.sqrt())
    detail_turn, detail_jitter = _detail_turn(
        torch.atan2(per_video(uy), per_video(ux)), present * dshare * (offset / 0.2).clamp(0.0, 1.0)
    )
    moment_turn = _moment_turn([(per_video(a), per_video(m)) for a, m in phase], pair_w)
    moved = vivid.reshape(b, t, k, h * w).diff(dim=1).abs().sum(-1)  # [B, T-1, K]
    change = (moved / (mass[:, 1:] + mass[:, :-1] + 1.0)).mean(1)

    presence = (area.mean(1) / PRESENT_AREA).clamp(0.0, 1.0)
    feats = torch.stack(
        [
            area.mean(1).sqrt(),
            a_start.clamp_min(0).sqrt(),
            a_end.clamp_min(0).sqrt(),
            torch.log((a_end + 1e-3) / (a_start + 1e-3)),
            x_end - x_start,
            y_end - y_start,
            path_y - (y_end - y_start).abs(),
            path_x - (x_end - x_start).abs(),
            over_time(compact_f),
            over_time(kurt_f),
            over_time(ecc_f),
            *(over_time(s) for s in sym_f),
            over_time(fill),
            detail_turn,
            detail_jitter,
            moment_turn,
            change,
        ],
        dim=-1,
    )
    return feats * presence.unsqueeze(-1)


def _detail_turn(phi: torch.Tensor, reliable: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """How far, and how unsteadily, the direction ``phi`` [B, T, K] from a bin's centroid to
    its darker detail turns over the frames, each step weighed by how ``reliable`` both of
    its frames are (in half turns)."""
    t = phi.shape[1]
    turn = _wrap(phi.diff(dim=1)) * torch.minimum(reliable[:, 1:], reliable[:, :-1])
    return turn.sum(1).abs() / math.pi, turn.abs().sum(1) / math.pi / (t - 1)


def _box_fill(flat: torch.Tensor, wx: torch.Tensor, wy: torch.Tensor) -> torch.Tensor:
    """Bounding-box fill of each mask [N, H, W] thresholded at half its peak, in its window."""
    n, h, w = flat.shape
    boxed = flat * wy.unsqueeze(-1) * wx.unsqueeze(1)
    peak = boxed.amax(dim=(1, 2), keepdim=True)
    hard = (boxed > 0.5 * peak) & (peak > 0.1)
    rows, cols = hard.any(2), hard.any(1)
    iy, ix = torch.arange(h, device=flat.device), torch.arange(w, device=flat.device)
    height = (torch.where(rows, iy, -1).amax(1) - torch.where(rows, iy, h).amin(1) + 1).clamp_min(1)
    width = (torch.where(cols, ix, -1).amax(1) - torch.where(cols, ix, w).amin(1) + 1).clamp_min(1)
    return hard.sum(dim=(1, 2)).to(flat.dtype) / (height * width).to(flat.dtype)


def _moment_turn(
    phases: list[tuple[torch.Tensor, torch.Tensor]], pair_w: torch.Tensor
) -> torch.Tensor:
    """How far the shape turns, from its complex moments' phases [B, T, K] of orders 2, 3,
    ...: the order-n moment turns n times as fast as the shape, and each order votes with
    its strength (an n-fold symmetric shape has a strong order n)."""
    votes, weights = [], []
    for order, (angle, magnitude) in enumerate(phases, start=2):
        strength = torch.minimum(magnitude[:, 1:], magnitude[:, :-1]).clamp(max=1.0) * pair_w
        step = _wrap(angle.diff(dim=1) * order) / order
        votes.append((step * strength).sum(1))
        weights.append(strength.sum(1))
    return sum(v.abs() for v in votes) / (sum(weights) + 0.05) / math.pi


def _pooled(bins: torch.Tensor) -> torch.Tensor:
    """Colour-blind summary [B, len(BIN_FEATURES)]: bin features averaged with their areas as weights."""
    weight = bins[..., 0] ** 2  # mean area
    return (bins * weight.unsqueeze(-1)).sum(1) / weight.sum(1, keepdim=True).clamp_min(_EPS)


def _histogram(hue: torch.Tensor, saturation: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
    """Colour histogram over all frames: hue x (vivid, dim, muted) plus grey levels."""
    chromatic = _gate(saturation, VIVID_SATURATION)
    muted = _gate(saturation, 0.15) * (1 - chromatic)
    bright = _gate(value, VIVID_VALUE)
    parts = [
        _hue_response(hue, weight).mean(dim=(1, -2, -1))
        for weight in (chromatic * bright, chromatic * (1 - bright), muted)
    ]
    grey = 1 - chromatic - muted
    levels = torch.clamp(value * GREY_LEVELS, max=GREY_LEVELS - 1e-4).floor().long()
    one_hot = F.one_hot(levels, GREY_LEVELS).to(value.dtype)  # [B, T, H, W, G]
    grey_hist = (one_hot * grey.unsqueeze(-1)).mean(dim=(1, 2, 3))
    return torch.cat([*parts, grey_hist], dim=1).clamp_min(0).sqrt()


def _texture(x: torch.Tensor, vivid_any: torch.Tensor, hue, saturation, value) -> torch.Tensor:
    """Background statistics on the per-pixel temporal median, vivid regions masked out."""
    luma = _luma(x)  # [B, T, H, W]
    median = luma.median(dim=1).values
    background = 1 - F.max_pool2d(vivid_any.amax(1, keepdim=True), 5, 1, 2).squeeze(1)
    weight = background[:, 1:-1, 1:-1]
    wsum = weight.sum(dim=(-2, -1)).clamp_min(_EPS)
    m = median.unsqueeze(1)
    sobel = torch.tensor([[-1.0, 0.0, 1.0], [-2.0, 0.0, 2.0], [-1.0, 0.0, 1.0]], device=x.device)
    gx = F.conv2d(m, (sobel / 8).view(1, 1, 3, 3)).squeeze(1)
    gy = F.conv2d(m, (sobel.T / 8).reshape(1, 1, 3, 3)).squeeze(1)
    lap_k = torch.tensor([[0.0, 1.0, 0.0], [1.0, -4.0, 1.0], [0.0, 1.0, 0.0]], device=x.device)
    lap = F.conv2d(m, lap_k.view(1, 1, 3, 3)).squeeze(1)
    mag = torch.sqrt(gx * gx + gy * gy + 1e-12)

    def wmean(v: torch.Tensor) -> torch.Tensor:
        return (v * weight).sum(dim=(-2, -1)) / wsum

    energy = wmean(gx * gx + gy * gy).clamp_min(_EPS)
    c2, s2 = wmean(gx * gx - gy * gy), wmean(2 * gx * gy)
    coherence = torch.sqrt(c2 * c2 + s2 * s2) / energy
    inner = median[:, 1:-1, 1:-1]
    luma_mean = wmean(inner)
    luma_std = torch.sqrt(wmean((inner - luma_mean[:, None, None]) ** 2).clamp_min(0))
    bg_full = background.unsqueeze(1)  # [B, 1, H, W]
    bsum = (bg_full.sum(dim=(-2, -1)) * x.shape[1]).clamp_min(_EPS).squeeze(1)

    def bmean(v: torch.Tensor) -> torch.Tensor:
        return (v * bg_full).sum(dim=(1, -2, -1)) / bsum

    flicker = bmean((luma - median.unsqueeze(1)).abs())
    return torch.stack(
        [
            wmean(mag) * 4,
            wmean((mag > 0.05).to(x.dtype)),
            wmean(((mag > 0.005) & (mag <= 0.05)).to(x.dtype)),
            coherence,
            c2 / energy,
            s2 / energy,
            wmean(lap.abs()) * 4,
            luma_std * 4,
            bmean(saturation * torch.cos(hue)),
            bmean(saturation * torch.sin(hue)),
            bmean(saturation),
            bmean(value),
            flicker * 10,
            background.mean(dim=(-2, -1)),
        ],
        dim=1,
    )


def _motion(x: torch.Tensor) -> torch.Tensor:
    """Global motion energy: mean absolute luma change between sampled frames."""
    diff = _luma(x).diff(dim=1).abs()
    return torch.stack(
        [diff.mean(dim=(1, 2, 3)) * 10, (diff > 0.1).to(x.dtype).mean(dim=(1, 2, 3))], 1
    )


@torch.no_grad()
def extract_frames_features(frames: torch.Tensor) -> torch.Tensor:
    """Features [B, FEATURE_DIM] (float32) of clips [B, T, H, W, 3] (uint8 RGB or floats in
    [0, 1], resampled to ``N_FRAMES`` x ``SIZE`` x ``SIZE``) on ``frames.device``."""
    x = prepare_frames(frames)
    hue, saturation, value = _hsv(x)  # [B, T, H, W]
    chroma_gate = _gate(saturation, VIVID_SATURATION)
    vivid_gate = chroma_gate * _gate(value, VIVID_VALUE)
    texture = _texture(x, vivid_gate, hue, saturation, value)
    # Per-hue-bin analysis at BIN_SIZE: colour vectors are area-pooled, so a pooled pixel
    # keeps the hue of its vivid part and the fraction of it that is vivid.
    b, t = x.shape[:2]
    small = F.interpolate(x.reshape(b * t, 3, SIZE, SIZE), size=(BIN_SIZE, BIN_SIZE), mode="area")
    small = small.reshape(b, t, 3, BIN_SIZE, BIN_SIZE)
    s_hue, s_sat, s_val = _hsv(small)
    s_chroma = _gate(s_sat, VIVID_SATURATION)
    vivid = _hue_response(s_hue, s_chroma * _gate(s_val, VIVID_VALUE))  # [B, T, K, h, w]
    darker = s_chroma * _gate(s_val, 0.2) * (1 - _gate(s_val, VIVID_VALUE - 0.1))
    detail = _hue_response(s_hue, darker)
    bins = _bin_features(vivid, detail)
    parts = [bins.flatten(1), _pooled(bins), _histogram(s_hue, s_sat, s_val), texture, _motion(x)]
    return torch.cat(parts, dim=1).float()


def extract_clips_features(
    clips: Sequence[np.ndarray] | np.ndarray,
    *,
    device: str | torch.device = "cpu",
    batch_size: int = 4,
) -> np.ndarray:
    """Features (n x FEATURE_DIM float32) of uint8 clips (each T x H x W x 3), in chunks."""
    out = np.zeros((len(clips), FEATURE_DIM), dtype=np.float32)
    for start in range(0, len(clips), batch_size):
        chunk = np.stack([np.asarray(c) for c in clips[start : start + batch_size]])
        tensor = torch.from_numpy(chunk).to(device)
        out[start : start + len(chunk)] = extract_frames_features(tensor).cpu().numpy()
    return out


def extract_features(path: str | Path, *, device: str | torch.device = "cpu") -> np.ndarray:
    """The FEATURE_DIM float32 feature vector of the whole video file at ``path``."""
    return extract_video(path, device=device)[0]


def extract_video(
    path: str | Path,
    *,
    device: str | torch.device = "cpu",
    experts: bool = False,
    span: Span | None = None,
) -> tuple[np.ndarray, ExpertSequences | None]:
    """The clip vector of the video file at ``path`` (or of its segment ``span``) and,
    with ``experts``, its three expert sequences, from one decoding."""
    frames = decode_frames(path, span=span)
    vector = extract_frames_features(torch.from_numpy(frames).unsqueeze(0).to(device))[0]
    return vector.cpu().numpy(), extract_experts(frames) if experts else None


Extracted = tuple[np.ndarray | None, "ExpertSequences | None", str | None]
"""A clip's vector and experts, or (None, None, why it could not be read)."""


def _extract_or_problem(job: tuple[str, str | torch.device, bool, Span | None]) -> Extracted:
    path, device, experts, span = job
    try:
        vector, sequences = extract_video(path, device=device, experts=experts, span=span)
    except Exception as exc:  # PyAV raises many error types for broken files
        return None, None, str(exc) or type(exc).__name__
    return vector, sequences, None


def extract_videos(
    paths: Sequence[str],
    *,
    device: str | torch.device = "cpu",
    experts: bool = False,
    workers: int = 1,
    spans: Sequence[Span | None] | None = None,
) -> Iterator[Extracted]:
    """:func:`extract_video` of each path (segment: ``spans``) in order, or the problem of a
    file that cannot be read; ``workers`` > 1 (CPU only) spawns processes of one thread each."""
    spans = list(spans) if spans is not None else [None] * len(paths)
    jobs = [(path, device, experts, span) for path, span in zip(paths, spans, strict=True)]
    if workers <= 1 or len(paths) < 2 or torch.device(device).type != "cpu":
        yield from map(_extract_or_problem, jobs)
        return
    context = multiprocessing.get_context("spawn")
    one_thread = {"initializer": torch.set_num_threads, "initargs": (1,)}
    with context.Pool(min(workers, len(paths)), **one_thread) as pool:
        yield from pool.imap(_extract_or_problem, jobs, chunksize=4)


APPEARANCE_NAMES: tuple[str, ...] = (
    *HIST_NAMES,
    *(f"tex_{name}" for name in TEXTURE_NAMES),
    *"vivid_area vivid_x vivid_y vivid_spread vivid_eccentricity".split(),
)
"""Per frame: the colour histogram and background texture of the clip vector, taken on that
frame alone, and the position, spread and elongation of all its vivid pixels."""
ACTION_NAMES: tuple[str, ...] = (
    *MOTION_NAMES,
    *(f"bin{b:02d}_{name}" for name in ("area_change", "dx", "dy") for b in range(HUE_BINS)),
)
"""Per step between consecutive frames: global luma change, and per hue bin the change of
vivid area and the centroid's displacement (zero where the colour is absent)."""
OBJECT_NAMES: tuple[str, ...] = tuple(
    "time hue_cos hue_sin saturation value area x y width height bbox_fill compactness "
    "eccentricity symmetry3 symmetry4 symmetry5".split()
)
"""Per region (a connected component of one hue bin's vivid pixels in one frame): when, what
colour, where, how big, and its shape moments (as in the clip vector, on a hard mask)."""
EXPERTS: tuple[str, ...] = ("appearance", "action", "objects")
EXPERT_DIMS: dict[str, int] = dict(
    zip(EXPERTS, map(len, (APPEARANCE_NAMES, ACTION_NAMES, OBJECT_NAMES)), strict=True)
)
MIN_REGION_PIXELS = 6
"""Smallest connected component kept as an object, at ``BIN_SIZE`` (0.15% of the frame)."""
MAX_REGIONS = 64
"""At most this many regions per clip: the largest, kept in frame order."""


@dataclass(frozen=True)
class ExpertSequences:
    """A clip's three feature experts, float32: appearance (T x d), action (S x d), objects
    (N x d). S is T - 1 for computed ones (frame differences); every length is at least 1."""

    appearance: np.ndarray
    action: np.ndarray
    objects: np.ndarray

    def arrays(self) -> dict[str, np.ndarray]:
        return {name: getattr(self, name) for name in EXPERTS}

    def pooled(self) -> np.ndarray:
        """Each expert averaged over its steps, concatenated: one vector per clip (mme, jpose)."""
        return np.concatenate([array.mean(0) for array in self.arrays().values()])


def _luma(x: torch.Tensor) -> torch.Tensor:
    return 0.299 * x[..., 0, :, :] + 0.587 * x[..., 1, :, :] + 0.114 * x[..., 2, :, :]


def _vivid_layout(vivid: np.ndarray) -> np.ndarray:
    """Area, centroid, spread and eccentricity of each frame's soft vivid mask [T, h, w]."""
    _, h, w = vivid.shape
    ys, xs = (np.arange(h) + 0.5) / h, (np.arange(w) + 0.5) / w
    mass = vivid.sum((1, 2))
    denom = np.maximum(mass, _EPS)
    cx = (vivid.sum(1) @ xs) / denom
    cy = (vivid.sum(2) @ ys) / denom
    dx, dy = xs[None, None, :] - cx[:, None, None], ys[None, :, None] - cy[:, None, None]
    mxx, myy = (vivid * dx**2).sum((1, 2)) / denom, (vivid * dy**2).sum((1, 2)) / denom
    mxy = (vivid * dx * dy).sum((1, 2)) / denom
    spread = np.maximum(mxx + myy, 1e-5)
    eccentricity = np.sqrt((mxx - myy) ** 2 + 4 * mxy**2) / spread
    present = mass > MIN_REGION_PIXELS
    return np.stack(
        [np.sqrt(mass / (h * w)), cx * present, cy * present, np.sqrt(spread) * present,
         eccentricity * present],
        axis=1,
    )  # fmt: skip


def _region_features(
    t: float, ys: np.ndarray, xs: np.ndarray, hue, saturation, value, size: int
) -> np.ndarray:
    """:data:`OBJECT_NAMES` of one region from its pixel coordinates and colours."""
    n = len(ys)
    x, y = (xs + 0.5) / size, (ys + 0.5) / size
    cx, cy = x.mean(), y.mean()
    z = (x - cx) + 1j * (y - cy)
    spread = max(float(np.mean(np.abs(z) ** 2)), 1.0 / size**2)
    width = (xs.max() - xs.min() + 1) / size
    height = (ys.max() - ys.min() + 1) / size
    area = n / size**2
    symmetry = [abs(np.mean(z**order)) / spread ** (order / 2) for order in (2, 3, 4, 5)]
    return np.array(
        [
            t, np.cos(hue).mean(), np.sin(hue).mean(), saturation.mean(), value.mean(),
            np.sqrt(area), cx, cy, width, height, area / (width * height),
            area / (2 * math.pi * spread), *symmetry,
        ],
        dtype=np.float32,
    )  # fmt: skip


def _regions(vivid: np.ndarray, hue: np.ndarray, saturation, value) -> np.ndarray:
    """Connected components of each hue bin's vivid pixels, per frame -> [N, OBJECT_DIM]."""
    from scipy import ndimage

    t_count, _, h, w = vivid.shape
    rows: list[tuple[int, int, np.ndarray]] = []
    for t in range(t_count):
        strongest = vivid[t].argmax(0)
        on = vivid[t].max(0) > 0.25
        for k in np.unique(strongest[on]):
            labels, count = ndimage.label(on & (strongest == k), structure=np.ones((3, 3)))
            for index, box in enumerate(ndimage.find_objects(labels), start=1):
                ys, xs = np.nonzero(labels[box] == index)
                if len(ys) < MIN_REGION_PIXELS:
                    continue
                ys, xs = ys + box[0].start, xs + box[1].start
                when = t / max(t_count - 1, 1)
                features = _region_features(
                    when, ys, xs, hue[t, ys, xs], saturation[t, ys, xs], value[t, ys, xs], h
                )
                rows.append((t, len(ys), features))
    if not rows:
        return np.zeros((1, len(OBJECT_NAMES)), dtype=np.float32)  # the empty region
    kept = sorted(rows, key=lambda row: -row[1])[:MAX_REGIONS]
    return np.stack([row[2] for row in sorted(kept, key=lambda row: row[0])])


@torch.no_grad()
def extract_experts(frames: np.ndarray) -> ExpertSequences:
    """The three experts of one clip of uint8 RGB frames (T x H x W x 3), from pixels only
    (resampled as for the clip vector; regions and per-bin motion at ``BIN_SIZE``)."""
    x = prepare_frames(torch.from_numpy(np.asarray(frames))[None])[0]  # [T, 3, S, S]
    hue, saturation, value = _hsv(x)
    vivid_gate = _gate(saturation, VIVID_SATURATION) * _gate(value, VIVID_VALUE)
    per_frame = x.unsqueeze(1)  # each frame a clip of one
    texture = _texture(per_frame, vivid_gate.unsqueeze(1), hue[:, None], saturation[:, None],
                       value[:, None])  # fmt: skip
    small = F.interpolate(x, size=(BIN_SIZE, BIN_SIZE), mode="area")
    s_hue, s_sat, s_val = _hsv(small)
    histogram = _histogram(s_hue[:, None], s_sat[:, None], s_val[:, None])
    s_vivid = _gate(s_sat, VIVID_SATURATION) * _gate(s_val, VIVID_VALUE)
    vivid = _hue_response(s_hue, s_vivid)  # [T, K, h, w]
    layout = _vivid_layout(s_vivid.numpy().astype(np.float64))
    appearance = np.concatenate([histogram.numpy(), texture.numpy(), layout], axis=1)

    step = _luma(x).diff(dim=0).abs()
    global_motion = torch.stack([step.mean((1, 2)) * 10, (step > 0.1).float().mean((1, 2))], 1)
    mass = vivid.sum((-2, -1))  # [T, K]
    coords = (torch.arange(BIN_SIZE, dtype=vivid.dtype) + 0.5) / BIN_SIZE
    cx = (vivid.sum(-2) @ coords) / mass.clamp_min(_EPS)
    cy = (vivid.sum(-1) @ coords) / mass.clamp_min(_EPS)
    present = (mass / (BIN_SIZE * BIN_SIZE) / PRESENT_AREA).clamp(0.0, 1.0)
    both = torch.minimum(present[1:], present[:-1])
    area = (mass / (BIN_SIZE * BIN_SIZE)).sqrt()
    action = torch.cat(
        [global_motion, area.diff(dim=0) * 10, cx.diff(dim=0) * both * 10,
         cy.diff(dim=0) * both * 10],
        dim=1,
    )  # fmt: skip
    objects = _regions(vivid.numpy(), s_hue.numpy(), s_sat.numpy(), s_val.numpy())
    return ExpertSequences(
        appearance.astype(np.float32), action.numpy().astype(np.float32), objects
    )
