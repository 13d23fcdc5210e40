"""qkv_projection: the reference is one product per weight split into heads, the production
path is the model's former code bit for bit, and attention projects through the registry."""

import torch
import torch.nn.functional as F

from examples.config import TINY
from operators import REGISTRY, ops, use_kernel_profile
from tests.registry.tiny_attention import attention_call

DECLARATION = REGISTRY.declaration("qkv_projection")


def draw(*shapes: tuple[int, ...], dtype=torch.float64) -> list[torch.Tensor]:
    generator = torch.Generator().manual_seed(0)
    return [
        torch.randn(shape, generator=generator, dtype=torch.float64).to(dtype) for shape in shapes
    ]


def test_reference_is_one_product_per_weight_in_head_layout():
    x, wq, wk, wv = draw((2, 3, 8), (8, 8), (4, 8), (4, 8))
    projections = DECLARATION.reference(x, wq, wk, wv, 4.0)
    assert isinstance(projections, tuple) and len(projections) == 3
    q, k, v = projections
    assert q.shape == (2, 2, 3, 4) and k.shape == (2, 1, 3, 4) and v.shape == (2, 1, 3, 4)
    assert all(t.is_contiguous() for t in (q, k, v))
    for got, weight in ((q, wq), (k, wk), (v, wv)):
        full = torch.einsum("btf,nf->btn", x, weight)
        heads = weight.shape[0] // 4
        for head in range(heads):
            expected = full[:, :, head * 4 : (head + 1) * 4]
            torch.testing.assert_close(got[:, head], expected, rtol=1e-12, atol=1e-12)


def test_reference_by_hand():
    # x = [1, 2]; head_dim 1: q = [1*3 + 2*4, 1*1 + 2*0] = [11, 1] as two heads
    x = torch.tensor([[[1.0, 2.0]]], dtype=torch.float64)
    wq = torch.tensor([[3.0, 4.0], [1.0, 0.0]], dtype=torch.float64)
    wk = torch.tensor([[0.5, 0.25]], dtype=torch.float64)
    wv = torch.tensor([[-1.0, 1.0]], dtype=torch.float64)
    q, k, v = DECLARATION.reference(x, wq, wk, wv, 1.0)
    assert q.flatten().tolist() == [11.0, 1.0]
    assert k.item() == 1.0 and v.item() == 1.0


def test_production_path_is_the_reference_bit_for_bit():
    x, wq, wk, wv = draw((2, 5, 64), (64, 64), (16, 64), (16, 64), dtype=torch.bfloat16)
    with use_kernel_profile("none"):
        got = ops.qkv_projection(x, wq, wk, wv, 16.0)
    expected = DECLARATION.reference(x, wq, wk, wv, 16.0)
    for projection, reference in zip(got, expected, strict=True):
        assert torch.equal(projection, reference)


def test_attention_projects_through_the_registry():
    (hidden,) = draw((2, 5, TINY.width), dtype=torch.bfloat16)
    attention, (_, key, value), hits = attention_call(hidden)
    assert hits.get("qkv_projection", 0) == 1
    projected = F.linear(hidden, attention.value_weight).view(2, 5, TINY.kv_heads, -1)
    assert torch.equal(value, projected.transpose(1, 2).contiguous())
    assert key.shape == (2, TINY.kv_heads, 5, TINY.head_dim)
