"""Registry calls under torch.compile: custom ops with fake implementations, one graph, and
a compiled function that follows the active kernel profile instead of running stale kernels.

On a CPU the kernels run under the Triton interpreter, which Inductor cannot compile, so the
preferred kernels are opaque custom ops and these tests compile with `aot_eager`: Dynamo's
tracing, the fake implementations and AOT's functional graph, with the ops run for real.
"""

import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

from operators import REGISTRY, KernelSelection, OperatorRegistry, ops, use_kernel_profile
from operators.catalog.gated_residual import gated_residual_reference
from operators.catalog.rms_norm import rms_norm_triton
from operators.errors import OperatorError
from operators.library import operator_schema, preferred_op
from tests.operators.test_selection import write_profile

HIDDEN = 96


def block(x, weight, update, gate):
    """Two registry calls, as a layer makes them."""
    return ops.gated_residual(ops.rms_norm(x, weight), update, gate)


@pytest.fixture(scope="module")
def block_inputs():
    generator = torch.Generator().manual_seed(5)

    def draw(*shape):
        return torch.randn(*shape, generator=generator).to(torch.bfloat16)

    return draw(2, 3, HIDDEN), draw(HIDDEN), draw(2, 3, HIDDEN), draw(2, HIDDEN)


def negated_gate_selection() -> KernelSelection:
    """`none` with a plausible bug in gated_residual: the gate's sign flipped."""

    def negated_gate(residual, update, gate):
        return gated_residual_reference(residual, update, -gate)

    registry = OperatorRegistry()
    for declaration in REGISTRY:
        preferred = negated_gate if declaration.name == "gated_residual" else declaration.preferred
        registry.register(declaration.model_copy(update={"preferred": preferred}))
    return KernelSelection("none", registry=registry)


def test_schemas_follow_the_declarations():
    assert operator_schema(REGISTRY.declaration("rms_norm")) == (
        "(Tensor x, Tensor weight, float eps=1e-06) -> Tensor"
    )
    assert operator_schema(REGISTRY.declaration("rotate_qk")) == (
        "(Tensor q, Tensor k, Tensor cos, Tensor sin) -> (Tensor, Tensor)"
    )


def test_the_preferred_op_runs_the_kernel_and_its_fake_gives_the_output_layout(block_inputs):
    x, weight, _, _ = block_inputs
    op = preferred_op(REGISTRY.declaration("rms_norm"))
    assert torch.equal(op(x, weight), rms_norm_triton(x, weight))
    transposed = x.transpose(0, 1)
    with FakeTensorMode() as mode:
        fake = op(mode.from_tensor(transposed), mode.from_tensor(weight))
    assert fake.shape == (3, 2, HIDDEN) and fake.dtype == torch.bfloat16 and fake.is_contiguous()


def test_a_compiled_block_is_one_graph_and_follows_a_profile_change(block_inputs):
    torch._dynamo.reset()
    compiled = torch.compile(block, backend="aot_eager", fullgraph=True, dynamic=False)
    broken = negated_gate_selection()
    with use_kernel_profile("none"):
        explained = torch._dynamo.explain(block)(*block_inputs)
        assert (explained.graph_count, explained.graph_break_count) == (1, 0)
        assert torch.equal(compiled(*block_inputs), block(*block_inputs))
    with use_kernel_profile(broken):
        expected = block(*block_inputs)
        got = compiled(*block_inputs)
    with use_kernel_profile("none"):
        again = compiled(*block_inputs)
        assert torch.equal(again, block(*block_inputs))
    assert not torch.equal(expected, again), "the broken selection must change the output"
    assert torch.equal(got, expected), "the compiled block kept the previous profile's kernels"


def test_a_compiled_call_under_torch_traces_the_reference(block_inputs):
    torch._dynamo.reset()
    with use_kernel_profile("torch"):
        explained = torch._dynamo.explain(block)(*block_inputs)
        graph_ops = {
            str(node.target)
            for graph in explained.graphs
            for node in graph.graph.nodes
            if node.op == "call_function"
        }
        compiled = torch.compile(block, backend="aot_eager", fullgraph=True)
        assert torch.equal(compiled(*block_inputs), block(*block_inputs))
    assert not any("kernel_controller" in target for target in graph_ops)
    assert any("rsqrt" in target for target in graph_ops)


def test_a_compiled_call_runs_the_tuned_kernel_where_it_applies(tmp_path):
    write_profile(tmp_path)
    torch._dynamo.reset()
    rows = torch.randn(4, 1024).to(torch.bfloat16)
    other = torch.randn(3, 1024).to(torch.bfloat16)
    weight = torch.randn(1024).to(torch.bfloat16)

    def norm(x, w):
        return ops.rms_norm(x, w)

    compiled = torch.compile(norm, backend="aot_eager", fullgraph=True, dynamic=False)
    with use_kernel_profile(KernelSelection("fast", tuned_root=tmp_path)):
        assert bool((compiled(rows, weight) == 7.0).all())
        assert torch.equal(compiled(other, weight), rms_norm_triton(other, weight))


def test_an_operator_never_resolved_is_a_clear_error():
    selection = KernelSelection("none")
    with pytest.raises(OperatorError, match="was not resolved before compiling"):
        selection.compiled("rms_norm")
