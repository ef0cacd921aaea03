"""SRCT, the semantic-role-aware correlation transformer (Zhu, Bresson & Lim, "Semantic Role
Aware Correlation Transformer for Text to Video Retrieval", §3-§4): role graphs refined by
role-typed attention (HGR, Chen et al., CVPR 2020, §3.2) against correlated appearance, action
and object experts, matched by the mean of three level cosines (empty levels are zero).
Training: frozen MiniLM, Adam lr 5e-4, batch 128, margin 0.2, dropout 0.1, 10 epochs.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from config.errors import UserError
from retrieval.datasets.roles import ROLE_ORDER, RoleGraph, role_graphs

from .base import TrainingData, VideoInputs
from .features import EXPERTS, ExpertSequences
from .losses import BatchRelevance
from .text import MINILM_DIM, cached, embed_tokens, load_spacy
from .training import NetworkEncoder, Standardiser, Step

LEVELS = 3
"""Sentence, actions, entities (video: appearance, action-correlated, object-correlated)."""
ROLES: tuple[str, ...] = ("SELF", *ROLE_ORDER)
"""Edge types of the text graph: a self-loop and each role (V: sentence -> verb)."""
_ROLE_INDEX = {role: i for i, role in enumerate(ROLES)}
NODE_KINDS: tuple[str, ...] = ("sentence", "verb", "argument")


def pack_levels(levels: np.ndarray) -> np.ndarray:
    """One faiss vector per item from n x 3 x d level embeddings: each level L2-normalised,
    concatenated and scaled by 1/sqrt(3), so the inner product is the mean level cosine."""
    levels = np.asarray(levels, dtype=np.float32)
    norms = np.maximum(np.linalg.norm(levels, axis=-1, keepdims=True), 1e-12)
    return (levels / norms).reshape(len(levels), -1) / np.float32(math.sqrt(LEVELS))


def masked_mean(x: torch.Tensor, padding: torch.Tensor) -> torch.Tensor:
    """Mean of ``x`` (b x n x d) over steps where ``padding`` (b x n) is False (else zero)."""
    keep = (~padding).unsqueeze(-1).to(x.dtype)
    return (x * keep).sum(1) / keep.sum(1).clamp(min=1.0)


class AttentionBlock(nn.Module):
    """z = Norm(MultiHead(q, kv, kv) + q); out = Norm(FF(z) + z) (the slides' §3 block)."""

    def __init__(self, dim: int, heads: int = 4, dropout: float = 0.0) -> None:
        super().__init__()
        self.attend = nn.MultiheadAttention(dim, heads, dropout=dropout, batch_first=True)
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.ff = nn.Sequential(nn.Linear(dim, 2 * dim), nn.ReLU(), nn.Linear(2 * dim, dim))

    def residual(
        self, query: torch.Tensor, memory: torch.Tensor, padding: torch.Tensor
    ) -> torch.Tensor:
        """Norm(MultiHead(query, memory, memory) + query), memory steps masked by ``padding``;
        a memory that is all padding contributes nothing (no NaN)."""
        empty = padding.all(1)
        safe = padding & ~empty.unsqueeze(1)
        out, _ = self.attend(query, memory, memory, key_padding_mask=safe, need_weights=False)
        out = out.masked_fill(empty.view(-1, 1, 1), 0.0)
        return self.norm1(out + query)

    def feed_forward(self, z: torch.Tensor) -> torch.Tensor:
        return self.norm2(self.ff(z) + z)

    def forward(
        self, query: torch.Tensor, memory: torch.Tensor, padding: torch.Tensor
    ) -> torch.Tensor:
        return self.feed_forward(self.residual(query, memory, padding))


class VideoCorrelation(nn.Module):
    """The slides' video side: f_e = Concat(F_T, F_O); s_e = block(f_e, f_e); z_s = self-attention
    of F_S; E_S = Norm(FF(c_e) + c_e), c_e = Norm(MultiHead(z_s, s_e, s_e) + z_s). Returns
    b x 3 x dim: pooled E_S, s_e over action steps and s_e over object steps."""

    def __init__(
        self, dims: Sequence[int], dim: int = 256, heads: int = 4, dropout: float = 0.1
    ) -> None:
        super().__init__()
        self.project = nn.ModuleList(nn.Linear(d, dim) for d in dims)
        self.event = AttentionBlock(dim, heads, dropout)
        self.scene = AttentionBlock(dim, heads, dropout)
        self.correlate = AttentionBlock(dim, heads, dropout)

    def forward(
        self,
        appearance: torch.Tensor,
        action: torch.Tensor,
        objects: torch.Tensor,
        pad_appearance: torch.Tensor,
        pad_action: torch.Tensor,
        pad_objects: torch.Tensor,
    ) -> torch.Tensor:
        f_s, f_t, f_o = (
            p(x) for p, x in zip(self.project, (appearance, action, objects), strict=True)
        )
        f_e = torch.cat([f_t, f_o], 1)
        pad_e = torch.cat([pad_action, pad_objects], 1)
        s_e = self.event(f_e, f_e, pad_e)
        z_s = self.scene.residual(f_s, f_s, pad_appearance)
        e_s = self.correlate(z_s, s_e, pad_e)
        n_t = f_t.shape[1]
        return torch.stack(
            [
                masked_mean(e_s, pad_appearance),
                masked_mean(s_e[:, :n_t], pad_action),
                masked_mean(s_e[:, n_t:], pad_objects),
            ],
            1,
        )


class GraphReasoning(nn.Module):
    """HGR-style reasoning (Chen et al., CVPR 2020, §3.2): ``layers`` rounds of role-gated
    attention along graph edges; b x 3 x dim: sentence node, mean verb, mean argument."""

    def __init__(self, in_dim: int, dim: int = 256, layers: int = 2) -> None:
        super().__init__()
        self.dim = dim
        self.input = nn.Linear(in_dim, dim)
        self.kind = nn.Embedding(len(NODE_KINDS), dim)
        self.role = nn.Embedding(len(ROLES), dim)
        self.query = nn.ModuleList(nn.Linear(dim, dim) for _ in range(layers))
        self.key = nn.ModuleList(nn.Linear(dim, dim) for _ in range(layers))
        self.value = nn.ModuleList(nn.Linear(dim, dim) for _ in range(layers))
        self.typed = nn.ModuleList(nn.Embedding(len(ROLES), dim) for _ in range(layers))
        self.norm = nn.ModuleList(nn.LayerNorm(dim) for _ in range(layers))

    def forward(
        self,
        nodes: torch.Tensor,
        kinds: torch.Tensor,
        node_roles: torch.Tensor,
        edge_roles: torch.Tensor,
    ) -> torch.Tensor:
        """``nodes`` b x n x in_dim; ``kinds`` b x n (index into NODE_KINDS, -1 = padding);
        ``node_roles`` b x n (the role of the edge into each node); ``edge_roles`` b x n x n
        (index into ROLES, -1 = no edge)."""
        padding = kinds < 0
        h = self.input(nodes) + self.kind(kinds.clamp(min=0)) + self.role(node_roles)
        edges = edge_roles >= 0
        for q, k, v, typed, norm in zip(
            self.query, self.key, self.value, self.typed, self.norm, strict=True
        ):
            gate = typed(edge_roles.clamp(min=0))  # b x n x n x dim
            scores = torch.einsum("bid,bjd->bij", q(h), k(h)) / math.sqrt(self.dim)
            scores = scores.masked_fill(~edges, float("-inf"))
            weights = torch.softmax(scores, -1).nan_to_num(0.0)
            message = torch.einsum("bij,bijd,bjd->bid", weights, torch.sigmoid(gate), v(h))
            h = norm(h + message).masked_fill(padding.unsqueeze(-1), 0.0)
        sentence = h[:, 0]
        verbs = masked_mean(h, kinds != 1)
        arguments = masked_mean(h, kinds != 2)
        return torch.stack([sentence, verbs, arguments], 1)


def graph_tensors(graphs: Sequence[RoleGraph]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(kinds b x n, node roles b x n, edge roles b x n x n) of ``graphs`` padded to the
    largest; edges go both ways and every real node has a self-loop."""
    n = max(len(g.nodes) for g in graphs)
    kinds = torch.full((len(graphs), n), -1, dtype=torch.long)
    node_roles = torch.zeros((len(graphs), n), dtype=torch.long)
    edge_roles = torch.full((len(graphs), n, n), -1, dtype=torch.long)
    for b, graph in enumerate(graphs):
        for node in graph.nodes:
            kinds[b, node.index] = NODE_KINDS.index(node.kind)
            edge_roles[b, node.index, node.index] = _ROLE_INDEX["SELF"]
        for edge in graph.edges:
            role = _ROLE_INDEX.get(edge.role, _ROLE_INDEX["SELF"])
            node_roles[b, edge.target] = role
            edge_roles[b, edge.source, edge.target] = role
            edge_roles[b, edge.target, edge.source] = role
    return kinds, node_roles, edge_roles


def level_similarity(text: torch.Tensor, video: torch.Tensor) -> torch.Tensor:
    """Captions x videos mean of the three level cosines (the slides' §4 matching)."""
    t = nn.functional.normalize(text, dim=-1)
    v = nn.functional.normalize(video, dim=-1)
    return torch.einsum("ild,jld->ij", t, v) / LEVELS


def hardest_negative_loss(
    similarity: torch.Tensor, positive: torch.Tensor, margin: float = 0.2
) -> torch.Tensor:
    """The slides' §4 ranking loss with the hardest in-batch negatives both ways, mean over the
    positive pairs (``positive``: bool captions x videos)."""
    low = torch.finfo(similarity.dtype).min
    negatives = similarity.masked_fill(positive, low)
    hardest = (negatives.max(1, keepdim=True).values, negatives.max(0, keepdim=True).values)
    cost = sum((margin - similarity + h).clamp(min=0) for h in hardest)
    return cost[positive].mean()


def padded_experts(
    clips: Sequence[ExpertSequences],
) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Per expert: the clips' sequences zero-padded to the longest (b x n x d float32) and the
    padding mask (b x n, True = padding)."""
    batches = []
    for name in EXPERTS:
        arrays = [np.asarray(getattr(clip, name), dtype=np.float32) for clip in clips]
        n = max(len(a) for a in arrays)
        values = np.zeros((len(arrays), n, arrays[0].shape[1]), dtype=np.float32)
        padding = np.ones((len(arrays), n), dtype=bool)
        for i, a in enumerate(arrays):
            values[i, : len(a)] = a
            padding[i, : len(a)] = False
        batches.append((torch.from_numpy(values), torch.from_numpy(padding)))
    return batches


class ExpertWidthError(UserError):
    """A video's expert sequences do not have the widths the model was trained on."""


_GRAPHS: dict[str, RoleGraph] = {}
_GRAPHS_LOCK = threading.Lock()


def caption_graphs(texts: Sequence[str], *, batch_size: int = 256) -> list[RoleGraph]:
    """Role graphs of ``texts``, parsed once per distinct caption per process and cached."""

    def parse(missing: list[str]) -> list[RoleGraph]:
        return role_graphs(missing, nlp=load_spacy(), batch_size=batch_size)

    return cached(_GRAPHS, _GRAPHS_LOCK, texts, parse)


@dataclass(frozen=True)
class CaptionInput:
    """One caption for the text side: MiniLM word pieces (T x 384), its role graph, and
    ``weights`` (nodes x T) averaging each node's pieces."""

    tokens: np.ndarray
    weights: np.ndarray
    graph: RoleGraph


def node_weights(graph: RoleGraph, spans: np.ndarray) -> np.ndarray:
    """Nodes x pieces averaging weights over the pieces inside each node's span (all pieces for
    the sentence node and any node no piece falls in)."""
    starts, ends = spans[:, 0], spans[:, 1]
    inside = np.zeros((len(graph.nodes), len(spans)), dtype=np.float32)
    for node in graph.nodes:
        inside[node.index] = (starts >= node.start_char) & (ends <= node.end_char) & (ends > starts)
    inside[0] = 1.0
    inside[inside.sum(1) == 0] = 1.0
    return inside / inside.sum(1, keepdims=True)


def caption_inputs(
    texts: Sequence[str], *, device: str | torch.device = "auto", batch_size: int = 256
) -> list[CaptionInput]:
    """:class:`CaptionInput` of each caption (role graphs cached, MiniLM run in batches)."""
    graphs = caption_graphs(texts, batch_size=batch_size)
    tokens = embed_tokens(texts, device=device, batch_size=batch_size)
    return [
        CaptionInput(t.vectors, node_weights(g, t.spans), g)
        for t, g in zip(tokens, graphs, strict=True)
    ]


def collate_captions(
    items: Sequence[CaptionInput], device: torch.device
) -> tuple[torch.Tensor, ...]:
    """(pieces b x T x 384, lengths b, weights b x n x T, kinds, node roles, edge roles)."""
    t = max(len(item.tokens) for item in items)
    kinds, node_roles, edge_roles = graph_tensors([item.graph for item in items])
    n = kinds.shape[1]
    tokens = np.zeros((len(items), t, items[0].tokens.shape[1]), dtype=np.float32)
    weights = np.zeros((len(items), n, t), dtype=np.float32)
    for i, item in enumerate(items):
        tokens[i, : len(item.tokens)] = item.tokens
        weights[i, : item.weights.shape[0], : item.weights.shape[1]] = item.weights
    lengths = torch.tensor([len(item.tokens) for item in items], dtype=torch.long)
    return tuple(
        x.to(device)
        for x in (torch.from_numpy(tokens), lengths, torch.from_numpy(weights), kinds,
                  node_roles, edge_roles)
    )  # fmt: skip


class SRCTNet(nn.Module):
    """Text side (MiniLM pieces -> BiLSTM -> :class:`GraphReasoning`) and video side
    (:class:`VideoCorrelation`), each b x 3 x dim; experts not ``used`` are masked out."""

    def __init__(
        self,
        expert_dims: Sequence[int],
        used: Sequence[bool],
        dim: int,
        heads: int,
        layers: int,
        dropout: float,
    ) -> None:
        super().__init__()
        self.used = tuple(bool(u) for u in used)
        self.standardise = nn.ModuleList(Standardiser(d) for d in expert_dims)
        self.lstm = nn.LSTM(MINILM_DIM, dim // 2, batch_first=True, bidirectional=True)
        self.graph = GraphReasoning(2 * (dim // 2), dim, layers)
        self.video = VideoCorrelation(expert_dims, dim, heads, dropout)

    def embed_texts(
        self, tokens: torch.Tensor, lengths: torch.Tensor, weights: torch.Tensor, *graph
    ) -> torch.Tensor:
        """Captions from :func:`collate_captions`' tensors (``graph``: kinds, node and edge
        roles, as :class:`GraphReasoning` takes them)."""
        packed = nn.utils.rnn.pack_padded_sequence(
            tokens, lengths.cpu(), batch_first=True, enforce_sorted=False
        )
        hidden, _ = self.lstm(packed)
        hidden, _ = nn.utils.rnn.pad_packed_sequence(
            hidden, batch_first=True, total_length=tokens.shape[1]
        )
        return self.graph(weights @ hidden, *graph)

    def embed_videos(
        self, values: Sequence[torch.Tensor], paddings: Sequence[torch.Tensor]
    ) -> torch.Tensor:
        xs, pads = [], []
        for standardise, used, x, pad in zip(
            self.standardise, self.used, values, paddings, strict=True
        ):
            xs.append(standardise(x) if used else torch.zeros_like(x))
            pads.append(pad if used else torch.ones_like(pad))
        return self.video(*xs, *pads)


class SRCTEncoder(NetworkEncoder):
    """SRCT over the feature experts (``experts``: those used) and MiniLM word pieces; one
    :func:`pack_levels` vector per item, trained with the hardest-negative loss (§4)."""

    name = "srct"
    uses_experts = True

    def __init__(
        self,
        *,
        expert_dims: Sequence[int] | None = None,
        experts: Sequence[str] = EXPERTS,
        embed_dim: int = 256,
        heads: int = 4,
        layers: int = 2,
        dropout: float = 0.1,
        margin: float = 0.2,
        lr: float = 5e-4,
        weight_decay: float = 1e-5,
        batch_size: int = 128,
        epochs: int = 10,
    ) -> None:
        self.experts = tuple(experts)
        unknown = set(self.experts) - set(EXPERTS)
        if unknown or "appearance" not in self.experts:
            raise ValueError(
                f"experts must include 'appearance' and be among {EXPERTS}, got {self.experts}"
            )
        if embed_dim % heads or embed_dim % 2:
            raise ValueError(f"embed_dim {embed_dim} must be even and divisible by heads {heads}")
        self.expert_dims = None if expert_dims is None else tuple(int(d) for d in expert_dims)
        self.embed_dim, self.heads, self.layers, self.dropout = embed_dim, heads, layers, dropout
        self.margin, self.lr, self.weight_decay = margin, lr, weight_decay
        self.batch_size, self.epochs = batch_size, epochs
        self.net = None if self.expert_dims is None else self._build(self.expert_dims)

    def _build(self, expert_dims: Sequence[int]) -> SRCTNet:
        used = [name in self.experts for name in EXPERTS]
        return SRCTNet(expert_dims, used, self.embed_dim, self.heads, self.layers, self.dropout)

    @property
    def dim(self) -> int:
        return LEVELS * self.embed_dim

    def config(self) -> dict[str, Any]:
        dims = None if self.expert_dims is None else list(self.expert_dims)
        names = "embed_dim heads layers dropout margin lr weight_decay batch_size epochs".split()
        return {"expert_dims": dims, "experts": list(self.experts)} | {
            name: getattr(self, name) for name in names
        }

    def _prepare(
        self, data: TrainingData, seed: int, device: torch.device, progress: bool
    ) -> tuple[SRCTNet, Step]:
        if data.video_experts is None:
            raise ValueError("the srct encoder trains on feature experts (video_experts)")
        self.expert_dims = tuple(
            int(getattr(data.video_experts[0], name).shape[1]) for name in EXPERTS
        )
        self._check_widths(data.video_experts, data.video_keys)
        net = self.net = self._build(self.expert_dims).to(device)
        videos = [(x.to(device), p.to(device)) for x, p in padded_experts(data.video_experts)]
        for standardise, (values, padding) in zip(net.standardise, videos, strict=True):
            standardise.fit(values[~padding])
        captions = caption_inputs(data.captions, device=device)

        def step(batch: np.ndarray, video_idx: np.ndarray, pairs: BatchRelevance) -> torch.Tensor:
            rows = torch.from_numpy(video_idx).to(device)
            v = net.embed_videos([x[rows] for x, _ in videos], [p[rows] for _, p in videos])
            t = net.embed_texts(*collate_captions([captions[i] for i in batch], device))
            return hardest_negative_loss(level_similarity(t, v), pairs.tv, self.margin)

        return net, step

    def _check_widths(
        self, clips: Sequence[ExpertSequences], keys: Sequence[str] | None = None
    ) -> None:
        for i, clip in enumerate(clips):
            for name, width in zip(EXPERTS, self.expert_dims or (), strict=True):
                array = getattr(clip, name)
                if array.ndim != 2 or array.shape[1] != width or len(array) == 0:
                    what = f"video {keys[i]!r}" if keys is not None else f"video {i}"
                    raise ExpertWidthError(
                        f"{what}: expert {name!r} has shape {array.shape}; the srct model "
                        f"expects T x {width} (the widths it was trained on)"
                    )

    def _encode_captions(
        self, texts: Sequence[str], device: torch.device, batch_size: int, progress: bool
    ) -> np.ndarray:
        self._require()
        if len(texts) == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        items = caption_inputs(texts, device=device, batch_size=batch_size)

        def run(net: SRCTNet, window: slice) -> torch.Tensor:
            return net.embed_texts(*collate_captions(items[window], device))

        return pack_levels(self._in_batches(len(texts), device, batch_size, progress, run))

    def _encode_videos(
        self, inputs: VideoInputs, device: torch.device, batch_size: int, progress: bool
    ) -> np.ndarray:
        self._require()
        if inputs.experts is None:
            raise ValueError("the srct encoder needs feature experts (VideoInputs.experts)")
        if len(inputs) == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        self._check_widths(inputs.experts, inputs.keys)
        clips = list(inputs.experts)

        def run(net: SRCTNet, window: slice) -> torch.Tensor:
            batch = [(x.to(device), p.to(device)) for x, p in padded_experts(clips[window])]
            return net.embed_videos([x for x, _ in batch], [p for _, p in batch])

        return pack_levels(self._in_batches(len(clips), device, batch_size, progress, run))
