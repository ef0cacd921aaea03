"""SRCT: the semantic-role-aware correlation transformer (Zhu, Bresson & Lim, "Semantic Role
Aware Correlation Transformer for Text to Video Retrieval", §3-§4), its network blocks.

Text: role graphs (``retrieval/semantic_roles.py``) become node features (pooled contextual
word vectors plus a role embedding) refined by role-typed attention restricted to graph
edges (HGR, Chen et al., CVPR 2020, §3.2), pooled into sentence, action and entity levels.
Video: appearance F_S, action F_T and object F_O sequences are correlated by the slides'
§3 equations. Padded steps are masked with ``key_padding_mask`` (True = padding) and
never change an output; empty levels (a caption with no verb) come out as zero vectors.
Matching is the mean of the three level cosines; :func:`pack_levels` turns it into one
inner product for faiss.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch
from torch import nn

from ..semantic_roles import ROLE_ORDER, RoleGraph
from .features import EXPERTS, ExpertSequences

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
    """Mean of ``x`` (b x n x d) over steps where ``padding`` (b x n) is False; zero when
    every step is padding."""
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
    """The slides' video side: experts projected to ``dim``, then
    f_e = Concat(F_T, F_O); s_e = block(f_e, f_e); z_s = self-attention of F_S;
    E_S = Norm(FF(c_e) + c_e) with c_e = Norm(MultiHead(z_s, s_e, s_e) + z_s).
    Returns b x 3 x dim: pooled E_S (sentence), pooled s_e over action steps (actions) and
    over object steps (entities)."""

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
    """HGR-style reasoning (Chen et al., CVPR 2020, §3.2): node features plus role embeddings,
    then ``layers`` rounds of attention restricted to graph edges (both directions and
    self-loops), each message transformed by its edge's role. Returns b x 3 x dim: the
    sentence node, the mean of verb nodes, the mean of argument nodes (zero when empty)."""

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
    """The slides' §4 contrastive ranking loss with the hardest in-batch negatives, both ways:
    mean over positive pairs (i, j) of [m - s(i, j) + max_{j' not pos} s(i, j')]_+ plus
    [m - s(i, j) + max_{i' not pos} s(i', j)]_+; ``positive`` is bool captions x videos."""
    low = torch.finfo(similarity.dtype).min
    negatives = similarity.masked_fill(positive, low)
    hardest_video = negatives.max(1, keepdim=True).values
    hardest_text = negatives.max(0, keepdim=True).values
    cost = (margin - similarity + hardest_video).clamp(min=0) + (
        margin - similarity + hardest_text
    ).clamp(min=0)
    return cost[positive].mean()


def padded_experts(
    clips: Sequence[ExpertSequences],
) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Per expert (appearance, action, objects): the clips' sequences zero-padded to the
    longest (b x n x d float32) and the padding mask (b x n, True = padding), the
    inputs of :class:`VideoCorrelation`."""
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
