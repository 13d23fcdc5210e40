"""rotary_qkv_projection: the reference is the three products in head layout with the queries
and keys rotated, the production path is the model's former code bit for bit, and attention
projects and rotates through the registry."""

import torch
import torch.nn.functional as F

from examples.config import TINY
from examples.layers import SelfAttention, WeightFactory, empty_cache, rope_tables
from operators import REGISTRY, ops, record_registry_hits, use_kernel_profile

DECLARATION = REGISTRY.declaration("rotary_qkv_projection")


def draw(*shapes: tuple[int, ...], dtype=torch.float64) -> list[torch.Tensor]:
    generator = torch.Generator().manual_seed(0)
    return [
        torch.randn(shape, generator=generator, dtype=torch.float64).to(dtype) for shape in shapes
    ]


def by_hand(x, weight, cos, sin, head_dim):
    """Each head's projection, its column j paired with j + head_dim / 2 and rotated."""
    full = torch.einsum("btf,nf->btn", x, weight)
    heads = []
    half = head_dim // 2
    for head in range(weight.shape[0] // head_dim):
        part = full[:, :, head * head_dim : (head + 1) * head_dim]
        first, second = part[..., :half], part[..., half:]
        rotated = torch.cat(
            (
                first * cos[:, :half] - second * sin[:, :half],
                second * cos[:, half:] + first * sin[:, half:],
            ),
            dim=-1,
        )
        heads.append(rotated)
    return torch.stack(heads, dim=1)


def test_reference_rotates_the_queries_and_keys_of_each_head():
    x, wq, wk, wv, cos, sin = draw((2, 3, 8), (8, 8), (4, 8), (4, 8), (3, 4), (3, 4))
    outputs = DECLARATION.reference(x, wq, wk, wv, cos, sin, 4.0)
    assert isinstance(outputs, tuple) and len(outputs) == 3
    q, k, v = outputs
    assert q.shape == (2, 2, 3, 4) and k.shape == (2, 1, 3, 4) and v.shape == (2, 1, 3, 4)
    torch.testing.assert_close(q, by_hand(x, wq, cos, sin, 4), rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(k, by_hand(x, wk, cos, sin, 4), rtol=1e-12, atol=1e-12)
    plain = torch.einsum("btf,nf->btn", x, wv).view(2, 3, 1, 4).transpose(1, 2)
    torch.testing.assert_close(v, plain, rtol=1e-12, atol=1e-12)


def test_reference_by_hand():
    # x = [1, 2], head_dim 2: q = [x.[3, 4], x.[1, 0]] = [11, 1]; a quarter turn (cos 0,
    # sin 1) gives [-1, 11]; k = [x.[1, 1], x.[0, 1]] = [3, 2] turns to [-2, 3]; v = [1, 2].
    x = torch.tensor([[[1.0, 2.0]]], dtype=torch.float64)
    wq = torch.tensor([[3.0, 4.0], [1.0, 0.0]], dtype=torch.float64)
    wk = torch.tensor([[1.0, 1.0], [0.0, 1.0]], dtype=torch.float64)
    wv = torch.tensor([[1.0, 0.0], [0.0, 1.0]], dtype=torch.float64)
    cos = torch.zeros(1, 2, dtype=torch.float64)
    sin = torch.ones(1, 2, dtype=torch.float64)
    q, k, v = DECLARATION.reference(x, wq, wk, wv, cos, sin, 2.0)
    assert q.flatten().tolist() == [-1.0, 11.0]
    assert k.flatten().tolist() == [-2.0, 3.0]
    assert v.flatten().tolist() == [1.0, 2.0]


def test_production_path_is_the_reference_bit_for_bit():
    x, wq, wk, wv = draw((2, 5, 64), (64, 64), (16, 64), (16, 64), dtype=torch.bfloat16)
    cos, sin = rope_tables(3, 5, 16)
    with use_kernel_profile("none"):
        got = ops.rotary_qkv_projection(x, wq, wk, wv, cos, sin, 16.0)
    expected = DECLARATION.reference(x, wq, wk, wv, cos, sin, 16.0)
    for produced, reference in zip(got, expected, strict=True):
        assert torch.equal(produced, reference)


def test_attention_projects_and_rotates_through_the_registry():
    attention = SelfAttention(TINY, WeightFactory(seed=3), output_gain=1.0)
    (hidden,) = draw((2, 5, TINY.width), dtype=torch.bfloat16)
    cos, sin = rope_tables(0, 5, TINY.head_dim)
    cache = empty_cache(TINY, 2, "cpu")
    with use_kernel_profile("torch"), record_registry_hits() as hits:
        _, key, value = attention(hidden, cos, sin, cache, cache)
    assert sum(n for (name, _, _), n in hits.items() if name == "rotary_qkv_projection") == 1
    projected = F.linear(hidden, attention.value_weight).view(2, 5, TINY.kv_heads, -1)
    assert torch.equal(value, projected.transpose(1, 2).contiguous())
    _, expected_key, _ = DECLARATION.reference(
        hidden,
        attention.query_weight,
        attention.key_weight,
        attention.value_weight,
        cos,
        sin,
        float(TINY.head_dim),
    )
    assert torch.equal(key, expected_key)
