"""Profile `stock`: what a PyTorch user deploys without this project. Attention runs SDPA,
every other operator its reference, eagerly and inside a compiled graph."""

import pytest
import torch

from operators import REGISTRY, ops, use_kernel_profile
from operators.catalog.rms_norm import rms_norm_reference
from operators.catalog.split_kv_attention import split_kv_attention_sdpa
from operators.selection import BUILTIN_PROFILES, KernelSelection


def attention_inputs(prefix: int = 5, tokens: int = 3):
    generator = torch.Generator().manual_seed(0)

    def draw(*shape):
        return torch.randn(*shape, generator=generator).to(torch.bfloat16)

    q = draw(2, 8, tokens, 256)
    return q, draw(2, 1, prefix, 256), draw(2, 1, prefix, 256), draw(2, 1, tokens, 256)


def test_stock_resolves_attention_to_sdpa_and_the_rest_to_references():
    selection = KernelSelection("stock")
    assert selection.resolve("split_kv_attention").preferred is split_kv_attention_sdpa
    assert selection.resolve("rms_norm").preferred is rms_norm_reference
    for name in REGISTRY.names():
        declaration = REGISTRY.declaration(name)
        expected = declaration.stock or declaration.reference
        assert selection.resolve(name).preferred is expected, name
        assert selection.resolve(name).tuned is None, name


def test_stock_attention_agrees_with_the_reference_within_the_contract():
    q, k_cache, v_cache, k = attention_inputs()
    v = torch.randn_like(k.float()).to(torch.bfloat16)
    declaration = REGISTRY.declaration("split_kv_attention")
    expected = declaration.reference(q, k_cache, v_cache, k, v)
    with use_kernel_profile("stock"):
        got = ops.split_kv_attention(q, k_cache, v_cache, k, v, declaration.params["scale"])
    assert got.dtype == torch.bfloat16 and got.shape == expected.shape
    torch.testing.assert_close(got.float(), expected.float(), atol=2**-7, rtol=2**-6)
    assert not torch.equal(got, torch.zeros_like(got))


def test_a_compiled_graph_under_stock_traces_sdpa():
    q, k_cache, v_cache, k = attention_inputs()
    v = k.clone()
    seen = []

    def backend(graph, example_inputs):
        seen.extend(str(node.target) for node in graph.graph.nodes)
        return graph.forward

    def forward(q, k_cache, v_cache, k, v):
        return ops.split_kv_attention(q, k_cache, v_cache, k, v, 0.0625)

    with use_kernel_profile("stock"):
        torch.compile(forward, backend=backend, dynamic=False, fullgraph=True)(
            q, k_cache, v_cache, k, v
        )
    assert any("scaled_dot_product_attention" in target for target in seen)
    torch._dynamo.reset()


@pytest.mark.parametrize("name", BUILTIN_PROFILES)
def test_install_refuses_a_built_in_profile_name(name, tmp_path, capsys):
    from controller.cli import main

    assert main(["install", str(tmp_path), "--profile", name]) == 2
    assert "built-in profiles" in capsys.readouterr().err
