"""The srct blocks: attention shapes and padding, graph reasoning, faiss packing, the loss."""

import numpy as np
import pytest
import torch

from retrieval.datasets.roles import RoleEdge, RoleGraph, RoleNode
from retrieval.encoders.srct import (
    AttentionBlock,
    GraphReasoning,
    VideoCorrelation,
    graph_tensors,
    pack_levels,
)


def _pad(x: torch.Tensor, extra: int) -> torch.Tensor:
    return torch.cat([x, torch.randn(x.shape[0], extra, x.shape[2]) * 100], 1)


def test_attention_block_shape_and_padding_is_ignored():
    torch.manual_seed(0)
    block = AttentionBlock(16, heads=4).eval()
    q, kv = torch.randn(2, 5, 16), torch.randn(2, 7, 16)
    out = block(q, kv, torch.zeros(2, 7, dtype=torch.bool))
    assert out.shape == (2, 5, 16)
    padded = block(q, _pad(kv, 3), torch.cat([torch.zeros(2, 7), torch.ones(2, 3)], 1).bool())
    assert torch.allclose(out, padded, atol=1e-5)


def test_video_correlation_levels_do_not_see_padding():
    torch.manual_seed(0)
    net = VideoCorrelation((59, 38, 16), dim=32).eval()
    a, t, o = torch.randn(1, 6, 59), torch.randn(1, 5, 38), torch.randn(1, 4, 16)
    none = lambda x: torch.zeros(1, x.shape[1], dtype=torch.bool)  # noqa: E731
    out = net(a, t, o, none(a), none(t), none(o))
    assert out.shape == (1, 3, 32)
    pads = [torch.cat([none(x), torch.ones(1, 2, dtype=torch.bool)], 1) for x in (a, t, o)]
    padded = net(_pad(a, 2), _pad(t, 2), _pad(o, 2), *pads)
    assert torch.allclose(out, padded, atol=1e-4)


def test_video_with_no_objects_gives_zero_entity_level_not_nan():
    net = VideoCorrelation((4, 4, 4), dim=8).eval()
    x = torch.randn(1, 3, 4)
    out = net(x, x, torch.zeros(1, 2, 4), *(torch.zeros(1, 3, dtype=torch.bool),) * 2,
              torch.ones(1, 2, dtype=torch.bool))  # fmt: skip
    assert not torch.isnan(out).any()
    assert torch.count_nonzero(out[0, 2]) == 0


def _node(i, kind, text):
    return RoleNode(i, kind, text, 0, 1, 0, len(text))


CUT = RoleGraph(
    "cut the roll with a sharp knife",
    (_node(0, "sentence", "cut the roll with a sharp knife"), _node(1, "verb", "cut"),
     _node(2, "argument", "the roll"), _node(3, "argument", "with a sharp knife")),
    (RoleEdge(0, 1, "V"), RoleEdge(1, 2, "ARG1"), RoleEdge(1, 3, "ARGM-MNR")),
)  # fmt: skip
NOMINAL = RoleGraph(
    "a red ball",
    (_node(0, "sentence", "a red ball"), _node(1, "argument", "a red ball")),
    (RoleEdge(0, 1, "ENT"),),
)


def test_graph_reasoning_levels_follow_edges_and_empty_verbs_are_zero():
    torch.manual_seed(0)
    kinds, node_roles, edge_roles = graph_tensors([CUT, NOMINAL])
    assert kinds.tolist() == [[0, 1, 2, 2], [0, 2, -1, -1]]
    assert edge_roles[0, 0, 2] == -1 and edge_roles[0, 1, 2] >= 0
    net = GraphReasoning(8, dim=16, layers=2).eval()
    out = net(torch.randn(2, 4, 8), kinds, node_roles, edge_roles)
    assert out.shape == (2, 3, 16) and not torch.isnan(out).any()
    assert torch.count_nonzero(out[1, 1]) == 0  # no verb: the action level is empty
    # the argument "the roll" is two hops from the sentence: one layer cannot reach it
    one = GraphReasoning(8, dim=16, layers=1).eval()
    nodes = torch.randn(1, 4, 8)
    changed = nodes.clone()
    changed[0, 2] += 5.0
    a = one(nodes, kinds[:1], node_roles[:1], edge_roles[:1])
    b = one(changed, kinds[:1], node_roles[:1], edge_roles[:1])
    assert torch.allclose(a[0, 0], b[0, 0]) and not torch.allclose(a[0, 2], b[0, 2])


@pytest.mark.parametrize("seed", [0, 1])
def test_packed_inner_product_is_the_mean_level_cosine(seed):
    rng = np.random.default_rng(seed)
    text, video = rng.normal(size=(5, 3, 12)), rng.normal(size=(7, 3, 12)) * 3
    unit = lambda x: x / np.linalg.norm(x, axis=-1, keepdims=True)  # noqa: E731
    mean_cosine = np.einsum("ild,jld->ij", unit(text), unit(video)) / 3
    assert np.allclose(pack_levels(text) @ pack_levels(video).T, mean_cosine, atol=1e-6)


def test_hardest_negative_loss_uses_only_the_hardest_negative():
    from retrieval.encoders.srct import hardest_negative_loss, level_similarity

    s = torch.tensor([[0.9, 0.1, 0.5], [0.2, 0.8, 0.0]])
    positive = torch.tensor([[True, False, False], [False, True, False]])
    # (0,0): video side [0.2-0.9+0.5]=0, text side [0.2-0.9+0.2]=0;
    # (1,1): video side [0.2-0.8+0.2]=0, text side [0.2-0.8+0.1]=0
    assert hardest_negative_loss(s, positive) == 0
    # margin 0.5: only (0,0) against its hardest video negative 0.5 costs 0.1
    assert hardest_negative_loss(s, positive, margin=0.5) == pytest.approx(0.1 / 2)
    softer = s.clone()
    softer[1, 2] = 0.1  # below row 1's hardest negative: no change
    assert hardest_negative_loss(softer, positive, margin=0.5) == pytest.approx(0.05)
    harder = s.clone()
    harder[0, 2] = 0.7  # the hardest negative rises: the loss follows it
    assert hardest_negative_loss(harder, positive, margin=0.5) == pytest.approx(0.3 / 2)
    x = torch.randn(4, 3, 8)
    assert torch.allclose(level_similarity(x, x).diagonal(), torch.ones(4))


def test_padded_experts_feed_the_correlation_like_one_clip_at_a_time():
    from retrieval.encoders.features import ExpertSequences
    from retrieval.encoders.srct import padded_experts

    rng = np.random.default_rng(0)
    clips = [
        ExpertSequences(*(rng.normal(size=(n, d)).astype(np.float32) for n, d in shape))
        for shape in (((6, 5), (5, 3), (2, 4)), ((3, 5), (2, 3), (7, 4)))
    ]
    (a, pa), (t, pt), (o, po) = padded_experts(clips)
    assert a.shape == (2, 6, 5) and pa[1].tolist() == [False] * 3 + [True] * 3
    net = VideoCorrelation((5, 3, 4), dim=8).eval()
    together = net(a, t, o, pa, pt, po)
    alone = net(*(x for pair in zip(*padded_experts(clips[1:]), strict=True) for x in pair))
    assert torch.allclose(together[1], alone[0], atol=1e-5)
