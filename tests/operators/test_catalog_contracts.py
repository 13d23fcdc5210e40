"""Every catalog kernel meets its contract on scaled-down workloads, and wrong kernels do not."""

import pytest
import torch
import torch.nn.functional as F
import triton
import triton.language as tl

from operators.catalog import CATALOG, gated_gelu, gated_residual
from operators.catalog.attention_output import attention_output_reference
from operators.catalog.checking import first_violation, scaled_down
from operators.catalog.qkv_projection import qkv_projection_reference
from operators.catalog.split_kv_attention import split_kv_attention_triton
from operators.declaration import DISTRIBUTIONS

SEEDS = (0, 1)
SCALED = {declaration.name: scaled_down(declaration) for declaration in CATALOG}


def _cases():
    for declaration in SCALED.values():
        for workload in declaration.workloads:
            yield pytest.param(declaration, workload, id=f"{declaration.name}-{workload.name}")


@pytest.mark.parametrize(("declaration", "workload"), list(_cases()))
def test_production_kernel_meets_its_contract(declaration, workload):
    for seed in SEEDS:
        for distribution in DISTRIBUTIONS:
            violation = first_violation(
                declaration, declaration.preferred, workload, seed, distribution
            )
            assert violation is None, f"seed {seed}, {distribution}: {violation.describe()}"


def test_elementwise_kernels_meet_their_contracts_across_column_blocks(monkeypatch):
    monkeypatch.setitem(gated_gelu.TUNING, "block", 64)
    monkeypatch.setitem(gated_residual.TUNING, "block", 32)
    for module in (gated_gelu, gated_residual):  # the GPU's column blocks, not whole rows
        monkeypatch.setattr(module, "interpreter_block", lambda size, compiled: compiled)
    for name in ("gated_gelu", "gated_residual"):
        declaration = SCALED[name]
        for distribution in DISTRIBUTIONS:
            violation = first_violation(
                declaration, declaration.preferred, declaration.workloads[-1], 3, distribution
            )
            assert violation is None, f"{name}, {distribution}: {violation.describe()}"


def test_kernels_accept_head_major_views_of_token_major_tensors():
    declaration = SCALED["rotate_qk"]
    q, k, cos, sin = declaration.make_inputs(declaration.workloads[-1], seed=5)
    q_view = q.transpose(1, 2).contiguous().transpose(1, 2)
    assert not q_view.is_contiguous()
    got = declaration.preferred(q_view, k, cos, sin)
    expected = declaration.reference(q, k, cos, sin)
    for name, tensor, reference in zip(("q_out", "k_out"), got, expected, strict=True):
        assert declaration.contract.check(name, tensor, reference) is None


@triton.jit
def _rms_norm_mean_over_block(x_ptr, weight_ptr, out_ptr, hidden, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    columns = tl.arange(0, BLOCK)
    mask = columns < hidden
    x = tl.load(x_ptr + row * hidden + columns, mask=mask, other=0.0).to(tl.float32)
    weight = tl.load(weight_ptr + columns, mask=mask, other=0.0).to(tl.float32)
    inverse_rms = tl.rsqrt(tl.sum(x * x, axis=0) / BLOCK + eps)  # wrong: divides by the block
    tl.store(out_ptr + row * hidden + columns, x * inverse_rms * weight, mask=mask)


def rms_norm_mean_over_block(x, weight, eps=1e-6):
    """A classic Triton bug: the mean of squares divides by the padded block, not the row."""
    out = torch.empty_like(x)
    hidden = x.shape[-1]
    _rms_norm_mean_over_block[(x.shape[0],)](
        x, weight, out, hidden, eps, BLOCK=triton.next_power_of_2(hidden)
    )
    return out


def gated_residual_fused_rounding(residual, update, gate):
    """FMA-style: residual + update * gate rounded once instead of twice."""
    fused = residual.float() + update.float() * gate.float()[:, None, :]
    return fused.to(residual.dtype)


def rotate_qk_fused_rounding(q, k, cos, sin):
    """Both products and the sum in float32, rounded once: not what eager BF16 does."""

    def rotate(x):
        half = x.shape[-1] // 2
        rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
        return (x.float() * cos.float() + rotated.float() * sin.float()).to(x.dtype)

    return rotate(q), rotate(k)


def ada_rms_norm_without_one_plus(x, scale, shift, eps=1e-6):
    """Forgets the 1 + in the modulation."""
    x32 = x.float()
    normed = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + eps)
    return (normed * scale.float()[:, None] + shift.float()[:, None]).to(x.dtype)


def gated_gelu_swapped(gate, up):
    """Activates the up projection instead of the gate."""
    return torch.nn.functional.gelu(up, approximate="tanh") * gate


def gated_gelu_projection_swapped(x, gate_weight, up_weight):
    """Activates the up projection instead of the gate."""
    return gated_gelu_swapped(F.linear(x, gate_weight), F.linear(x, up_weight))


def qkv_projection_keys_as_values(x, wq, wk, wv, head_dim):
    """Projects the values through the key weight."""
    return qkv_projection_reference(x, wq, wk, wk, head_dim)


def attention_output_heads_swapped(attended, weight):
    """Merges the heads in reverse order."""
    return attention_output_reference(attended.flip(1), weight)


def modulation_over_steps_steps_swapped(*operands):
    """Every step's modulations from the next step's condition (the last step's from the first)."""
    conditions, weights = operands[:10], operands[10:]
    shifted = conditions[1:] + conditions[:1]
    return tuple(F.linear(condition, weight) for condition in shifted for weight in weights)


def attention_missing_prefix(q, k_cache, v_cache, k, v, scale):
    """Attends only to the current tokens, ignoring the cached prefix."""
    empty = k_cache[:, :, :0]
    return split_kv_attention_triton(q, empty, v_cache[:, :, :0], k, v, scale)


WRONG_KERNELS = {
    "rms_norm": rms_norm_mean_over_block,
    "ada_rms_norm": ada_rms_norm_without_one_plus,
    "gated_residual": gated_residual_fused_rounding,
    "gated_gelu": gated_gelu_swapped,
    "gated_gelu_projection": gated_gelu_projection_swapped,
    "qkv_projection": qkv_projection_keys_as_values,
    "attention_output": attention_output_heads_swapped,
    "rotate_qk": rotate_qk_fused_rounding,
    "split_kv_attention": attention_missing_prefix,
    "modulation_over_steps": modulation_over_steps_steps_swapped,
}


@pytest.mark.parametrize("name", sorted(WRONG_KERNELS))
def test_wrong_kernel_is_caught_by_the_same_check(name):
    declaration = SCALED[name]
    workload = max(declaration.workloads, key=lambda w: sum(w.axes.values()))
    if name == "split_kv_attention":
        workload = declaration.workloads[0]  # the one with a prefix to forget
    violation = first_violation(declaration, WRONG_KERNELS[name], workload, seed=0)
    assert violation is not None, f"the contract of {name} let a wrong kernel through"


def test_kernel_writing_into_its_input_is_caught():
    declaration = SCALED["gated_residual"]

    def in_place(residual, update, gate):
        return residual.add_(update * gate[:, None, :])

    violation = first_violation(declaration, in_place, declaration.workloads[-1])
    assert violation is not None and "modified" in violation.reason


def test_every_catalog_operator_has_a_production_kernel_and_pi05_workloads():
    assert sorted(SCALED) == [
        "ada_rms_norm",
        "attention_output",
        "gated_down_projection",
        "gated_gelu",
        "gated_gelu_projection",
        "gated_residual",
        "gated_residual_norm",
        "modulation_over_steps",
        "qkv_projection",
        "rms_norm",
        "rotate_qk",
        "split_kv_attention",
        "stacked_projection",
    ]
    for declaration in CATALOG:
        assert declaration.preferred is not None
        assert declaration.workloads
    attention = next(d for d in CATALOG if d.name == "split_kv_attention")
    assert {w.name: w.axes["prefix"] for w in attention.workloads} == {
        "action_b1": 576,
        "action_b8": 576,
        "prefix_b1": 0,
        "prefix_b8": 0,
    }


def test_production_attention_with_one_part_of_the_weights_meets_its_contract(monkeypatch):
    """The weights rounded once for the value product, as a flash SDPA rounds them: a setting
    `autotune` may choose, within "no less accurate than stock" on every distribution."""
    from operators.catalog import split_kv_attention

    monkeypatch.setitem(split_kv_attention.TUNING, "weight_parts", 1)
    declaration = SCALED["split_kv_attention"]
    for workload in declaration.workloads:
        for distribution in DISTRIBUTIONS:
            violation = first_violation(
                declaration, split_kv_attention_triton, workload, 0, distribution
            )
            assert violation is None, f"{workload.name}, {distribution}: {violation.describe()}"


def test_a_scaled_down_projection_splits_its_heads_at_the_scaled_head_dim():
    """A param named after a const axis shrinks with it: qkv_projection's head_dim is 48 where
    its axes are, so its outputs have the declared shapes (at 256 the 192 query rows would
    split into no head at all)."""
    small = SCALED["qkv_projection"]
    assert small.params["head_dim"] == 48.0
    assert next(d for d in CATALOG if d.name == "qkv_projection").params["head_dim"] == 256.0
    workload = small.workloads[0]
    outputs = small.reference(*small.make_inputs(workload, 0), **small.params)
    sizes = {axis.name: axis.value for axis in small.axes if axis.kind == "const"}
    sizes |= workload.axes
    for spec, tensor in zip(small.outputs, outputs, strict=True):
        assert tuple(tensor.shape) == tuple(sizes[axis] for axis in spec.shape), spec.name
