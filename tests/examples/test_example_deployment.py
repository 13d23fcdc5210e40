"""The tiny model deploys as a robot runs it: no host work in the forward, one graph per
compiled region, and (on a GPU) one CUDA graph that replays the eager forward bit for bit."""

import pytest
import torch
from torch import nn

from examples.config import TINY
from examples.deployment import deploy
from examples.expectation import compare_outputs
from examples.host_transfers import HostTransfers
from examples.layers import rope_tables
from examples.model import build_model, make_inputs
from operators import KernelSelection, OperatorError, use_kernel_profile


class HostTableInForward(nn.Module):
    """The capture bug this guards against: a table built on the host inside the forward."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        cos, _ = rope_tables(0, x.shape[0], x.shape[1])
        return x * cos.to(x.device)


def forward_transfers(model, inputs, device) -> list[str]:
    watch = HostTransfers(device)
    with watch:
        model(inputs)
    return watch.seen


def test_the_forward_copies_nothing_from_the_host():
    """On the meta device every host tensor that reaches the model would be a copy to a GPU."""
    model = build_model(TINY, 0, "meta")
    inputs = make_inputs(TINY, 2, 0, "meta")
    with use_kernel_profile("torch"):
        assert forward_transfers(model, inputs, "meta") == []


def test_a_table_copied_from_the_host_in_the_forward_is_seen():
    x = torch.empty(4, 16, dtype=torch.bfloat16, device="meta")
    seen = forward_transfers(HostTableInForward(), x, "meta")
    assert seen and "cpu -> meta" in seen[0]


def test_a_value_read_back_on_the_host_is_seen():
    """`.item()` waits for the device and freezes the value into a captured graph."""
    watch = HostTransfers("cpu")
    with watch:
        float(torch.ones(3).sum())
    assert watch.seen and "read on the host" in watch.seen[0]


@pytest.mark.slow
def test_the_whole_forward_is_one_graph_under_none_and_torch():
    """Dynamo traces the routed model without a break, so every compiled region is one graph."""
    model = build_model(TINY, 0, "cpu")
    inputs = make_inputs(TINY, 1, 0, "cpu")
    for profile in ("none", "torch"):
        torch._dynamo.reset()
        with use_kernel_profile(profile):
            explained = torch._dynamo.explain(model)(inputs)
        assert (explained.graph_count, explained.graph_break_count) == (1, 0), (
            profile,
            explained.break_reasons,
        )


def test_a_deployed_forward_refuses_another_selection():
    model = build_model(TINY, 0, "cpu")
    inputs = make_inputs(TINY, 1, 0, "cpu")
    with use_kernel_profile("torch"):
        deployed = deploy(model, "eager", inputs)
    with use_kernel_profile(KernelSelection("torch")), pytest.raises(OperatorError) as refused:
        deployed(inputs)
    assert "prepare it again" in str(refused.value)


def test_graph_modes_need_cuda_on_a_cpu_model():
    model = build_model(TINY, 0, "cpu")
    with pytest.raises(OperatorError, match="needs the model on a CUDA device"):
        deploy(model, "graph", make_inputs(TINY, 1, 0, "cpu"))


@pytest.mark.gpu
@pytest.mark.parametrize("profile", ["none", "torch"])
def test_a_cuda_graph_of_the_forward_replays_eager_bit_for_bit(profile):
    model = build_model(TINY, 0, "cuda")
    first, second = make_inputs(TINY, 2, 0, "cuda"), make_inputs(TINY, 2, 1, "cuda")
    with use_kernel_profile(profile):
        assert forward_transfers(model, first, "cuda") == []
        graph = deploy(model, "graph", first)
        expected = model(second)
        replayed = {name: tensor.clone() for name, tensor in graph(second).items()}
    for name, tensor in expected.items():
        assert torch.equal(replayed[name], tensor), name


@pytest.mark.gpu
def test_compiled_none_on_cuda_stays_within_the_contract_expectation():
    """Held to the references compiled the same way: Inductor also rounds the plain parts."""
    from examples.expectation import registry_calls_per_output

    model = build_model(TINY, 0, "cuda")
    inputs = make_inputs(TINY, 2, 0, "cuda")
    with use_kernel_profile("torch"):
        calls = registry_calls_per_output(model, inputs)
        reference = {k: v.clone() for k, v in deploy(model, "compile", inputs)(inputs).items()}
    torch._dynamo.reset()
    with use_kernel_profile("none"):
        outputs = deploy(model, "compile", inputs)(inputs)
    for comparison in compare_outputs(reference, outputs, calls):
        assert comparison.within, comparison
