"""Checking a catalog kernel against its reference, at full size or scaled down for the CPU.

The tests run every kernel under the Triton interpreter on scaled-down declarations; the GPU
benchmark runs the same check at the pi0.5 workloads.
"""

import torch

from operators.accuracy import AccuracyCheck
from operators.contract import ContractViolation
from operators.declaration import (
    Axis,
    InputDistribution,
    OperatorDeclaration,
    Workload,
    as_outputs,
    completed_axes,
)

SCALED_CONST_SIZES = {
    "hidden": 96,
    "mlp": 160,
    "query_heads": 4,
    "kv_heads": 2,
    "head_dim": 48,
    "merged": 4 * 48,
    "query_rows": 4 * 48,
    "kv_rows": 2 * 48,
}
"""Const axes shrunk so interpreter runs are fast; 96, 160 and 48 are not powers of two, so
every kernel's masking along them is exercised. `merged` is the heads side by side
(query_heads x head_dim), `query_rows` and `kv_rows` the projection weights' rows of the query
and key/value heads. A param named after a const axis (a projection's `head_dim`) takes the
axis's scaled size."""

SCALED_WORKLOADS: dict[str, tuple[dict[str, int], ...]] = {
    "rms_norm": ({"tokens": 1}, {"tokens": 13}),
    "ada_rms_norm": ({"batch": 1, "tokens": 1}, {"batch": 3, "tokens": 5}),
    "gated_residual": ({"batch": 1, "tokens": 1}, {"batch": 3, "tokens": 5}),
    "gated_residual_norm": ({"batch": 1, "tokens": 1}, {"batch": 3, "tokens": 5}),
    "gated_down_projection": ({"batch": 1, "tokens": 1}, {"batch": 3, "tokens": 5}),
    "gated_gelu": ({"tokens": 1}, {"tokens": 9}),
    "rotate_qk": ({"batch": 1, "tokens": 1}, {"batch": 2, "tokens": 9}),
    "split_kv_attention": (
        {"batch": 2, "tokens": 5, "prefix": 37},
        {"batch": 1, "tokens": 3, "prefix": 65},
        {"batch": 1, "tokens": 70, "prefix": 0},
    ),
}
"""Var-axis sizes per operator: single rows, odd counts, a prefix longer than one key block,
and an empty prefix with more queries than one query block."""

FALLBACK_VAR_SIZE = 3


def scaled_down(declaration: OperatorDeclaration) -> OperatorDeclaration:
    """The same operator with small const axes and small workloads, validated anew."""
    axes = tuple(
        Axis(
            name=axis.name,
            kind="const",
            value=SCALED_CONST_SIZES.get(axis.name, axis.value),
            description=axis.description,
        )
        if axis.kind == "const"
        else axis
        for axis in declaration.axes
    )
    variable = [axis.name for axis in declaration.axes if axis.kind == "var"]
    sizes = SCALED_WORKLOADS.get(
        declaration.name, ({name: FALLBACK_VAR_SIZE for name in variable},)
    )
    workloads = tuple(
        Workload(name="_".join(f"{axis}{size}" for axis, size in axes_.items()), axes=axes_)
        for axes_ in (completed_axes(axes, given) for given in sizes)
    )
    sizes_by_axis = {axis.name: axis.value for axis in axes if axis.kind == "const"}
    params = {
        name: float(sizes_by_axis[name]) if name in sizes_by_axis else value
        for name, value in declaration.params.items()
    }
    fields = {name: getattr(declaration, name) for name in type(declaration).model_fields}
    return OperatorDeclaration(**{**fields, "axes": axes, "workloads": workloads, "params": params})


def first_violation(
    declaration: OperatorDeclaration,
    kernel,
    workload: Workload,
    seed: int = 0,
    distribution: InputDistribution = "normal",
    device: torch.device | str = "cpu",
) -> ContractViolation | None:
    """Run `kernel` and the reference on the same fresh inputs; the first broken promise or None.

    A kernel that writes into its inputs breaks the contract too.
    """
    inputs = declaration.make_inputs(workload, seed, distribution, device)
    pristine = [tensor.clone() for tensor in inputs]
    got = as_outputs(kernel(*inputs, **declaration.params))
    for spec, tensor, original in zip(declaration.inputs, inputs, pristine, strict=True):
        if not torch.equal(tensor, original):
            return ContractViolation(output=spec.name, reason="the kernel modified this input")
    return AccuracyCheck.on_inputs(declaration, pristine).violation(got)
