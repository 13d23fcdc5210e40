"""What a candidate's outputs are held to: the reference as written, or, where the declaration
names the FP64 oracle (attention), the reference run in FP64 and rounded once."""

import torch

from gates.evaluator.expected import expected_outputs
from operators import REGISTRY
from operators.catalog.checking import scaled_down


def _case(name: str, distribution: str = "large"):
    declaration = scaled_down(REGISTRY.declaration(name))
    workload = declaration.workloads[-1]
    return declaration, declaration.make_inputs(workload, 1, distribution, "cpu")


def _attention64(q, k_cache, v_cache, k, v, scale):
    group = q.shape[1] // k.shape[1]
    keys = torch.cat((k_cache, k), dim=2).double().repeat_interleave(group, dim=1)
    values = torch.cat((v_cache, v), dim=2).double().repeat_interleave(group, dim=1)
    scores = torch.matmul(q.double(), keys.transpose(-1, -2)) * scale
    return torch.matmul(torch.softmax(scores, dim=-1), values)


def test_attention_is_held_to_its_reference_in_fp64_rounded_once():
    declaration, inputs = _case("split_kv_attention")
    assert declaration.oracle == "float64"
    before = [t.clone() for t in inputs]
    (expected,) = expected_outputs(declaration, inputs)
    exact = _attention64(*inputs, declaration.params["scale"])
    assert expected.dtype == torch.bfloat16
    assert torch.equal(expected, exact.to(torch.bfloat16))
    assert all(torch.equal(a, b) for a, b in zip(inputs, before, strict=True))


def test_an_operator_without_the_fp64_oracle_is_held_to_its_reference_as_written():
    declaration, inputs = _case("rms_norm")
    assert declaration.oracle == "reference"
    expected = expected_outputs(declaration, inputs)
    written = declaration.run_reference(*inputs)
    assert all(torch.equal(a, b) for a, b in zip(expected, written, strict=True))


def test_the_fp64_oracle_runs_a_narrow_reference_at_fp64():
    """A reference that rounds its scores to BF16 on the way: as written it is off, under the
    FP64 oracle every dtype it asks for is FP64, so the expected output is the exact one."""
    declaration, inputs = _case("split_kv_attention")

    def narrow(q, k_cache, v_cache, k, v, scale):
        group = q.shape[1] // k.shape[1]
        keys = torch.cat((k_cache, k), dim=2).float().repeat_interleave(group, dim=1)
        values = torch.cat((v_cache, v), dim=2).float().repeat_interleave(group, dim=1)
        scores = (torch.matmul(q.float(), keys.transpose(-1, -2)) * scale).to(torch.bfloat16)
        return torch.matmul(torch.softmax(scores.float(), dim=-1), values).to(q.dtype)

    exact = _attention64(*inputs, declaration.params["scale"]).to(torch.bfloat16)
    as_written = declaration.model_copy(update={"reference": narrow, "oracle": "reference"})
    oracle = declaration.model_copy(update={"reference": narrow})
    assert not torch.equal(expected_outputs(as_written, inputs)[0], exact)
    assert torch.equal(expected_outputs(oracle, inputs)[0], exact)


def test_a_kernel_off_by_more_than_the_tolerance_breaks_the_contract_against_fp64():
    declaration, inputs = _case("split_kv_attention", "normal")
    (expected,) = expected_outputs(declaration, inputs)
    assert declaration.contract.check("out", expected, expected) is None
    shifted = (expected.float() + 4 * 2**-9).bfloat16()  # past atol + rtol |ref| below |ref| 1
    assert declaration.contract.check("out", shifted, expected) is not None
