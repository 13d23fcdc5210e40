"""The fused rotary_qkv_projection kernel that `kernels/sessions/tune_rotary_qkv_projection.json`
submits: the session carries the kernel module as it is, and the kernel keeps the operator's
contract under the interpreter on small heads (ragged rows, two batches, every distribution);
a kernel that rotates the wrong way, or not at all, is caught."""

import sys
from pathlib import Path

import pytest
import torch

from operators.catalog.checking import first_violation
from operators.catalog.rotary_qkv_projection import DECLARATION
from operators.declaration import DISTRIBUTIONS, Axis, Workload

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))
sys.path.insert(0, str(BENCHMARKS.parent / "kernels"))

import rotary_qkv_projection_fused as fused  # noqa: E402
import solution_session  # noqa: E402

SIZES = {"features": 96, "query_heads": 4, "kv_heads": 1, "head_dim": 32}
SIZES |= {"query_rows": 128, "kv_rows": 32}
SMALL = DECLARATION.model_copy(
    update={
        "axes": tuple(
            Axis(name=a.name, kind="const", value=SIZES[a.name]) if a.kind == "const" else a
            for a in DECLARATION.axes
        ),
        "params": {"head_dim": 32.0},
    }
)
ONE_CALL = Workload(name="b1_t5", axes={"batch": 1, "tokens": 5})


def test_the_session_is_current():
    assert solution_session.main(["rotary_qkv_projection", fused.__file__, "--check"]) == 0


def test_the_kernel_module_declares_the_registered_operator():
    registered = DECLARATION.model_copy(
        update={
            "reference": fused.rotary_qkv_projection_reference,
            "preferred": fused.rotary_qkv_projection_kernel,
        }
    )
    assert registered == fused.DECLARATION


@pytest.mark.parametrize("batch, tokens", [(1, 5), (2, 37)])
def test_the_kernel_meets_the_contract_on_every_distribution(batch, tokens):
    workload = Workload(name=f"b{batch}_t{tokens}", axes={"batch": batch, "tokens": tokens})
    for distribution in DISTRIBUTIONS:
        violation = first_violation(
            SMALL, fused.rotary_qkv_projection_kernel, workload, 3, distribution
        )
        assert violation is None, f"{distribution}: {violation}"


def test_a_kernel_that_rotates_the_other_way_is_caught():
    def backwards(x, wq, wk, wv, cos, sin, head_dim):
        return fused.rotary_qkv_projection_kernel(x, wq, wk, wv, cos, -sin, head_dim)

    assert first_violation(SMALL, backwards, ONE_CALL, 3, "normal") is not None


def test_a_kernel_that_leaves_the_keys_unrotated_is_caught():
    def unrotated_keys(x, wq, wk, wv, cos, sin, head_dim):
        q, _, v = fused.rotary_qkv_projection_kernel(x, wq, wk, wv, cos, sin, head_dim)
        _, k, _ = fused.rotary_qkv_projection_kernel(
            x, wq, wk, wv, torch.ones_like(cos), torch.zeros_like(sin), head_dim
        )
        return q, k, v

    assert first_violation(SMALL, unrotated_keys, ONE_CALL, 3, "normal") is not None
