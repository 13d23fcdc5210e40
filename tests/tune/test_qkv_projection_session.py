"""The fused qkv_projection kernel that `kernels/sessions/tune_qkv_projection.json` submits:
the session carries the kernel module as it is, and the kernel keeps the operator's contract
under the interpreter on small heads (ragged rows, two batches, every distribution)."""

import sys
from pathlib import Path

import pytest

from operators.catalog.checking import first_violation
from operators.catalog.qkv_projection import DECLARATION
from operators.declaration import DISTRIBUTIONS, Axis, Workload

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))
sys.path.insert(0, str(BENCHMARKS.parent / "kernels"))

import qkv_projection_fused as fused  # noqa: E402
import solution_session  # noqa: E402

SIZES = {"features": 96, "query_heads": 4, "kv_heads": 1, "head_dim": 16}
SIZES |= {"query_rows": 64, "kv_rows": 16}
SMALL = DECLARATION.model_copy(
    update={
        "axes": tuple(
            Axis(name=a.name, kind="const", value=SIZES[a.name]) if a.kind == "const" else a
            for a in DECLARATION.axes
        ),
        "params": {"head_dim": 16.0},
    }
)


def test_the_session_is_current():
    assert solution_session.main(["qkv_projection", fused.__file__, "--check"]) == 0


@pytest.mark.parametrize("batch, tokens", [(1, 5), (2, 37)])
def test_the_kernel_meets_the_contract_on_every_distribution(batch, tokens):
    workload = Workload(name=f"b{batch}_t{tokens}", axes={"batch": batch, "tokens": tokens})
    for distribution in DISTRIBUTIONS:
        violation = first_violation(SMALL, fused.qkv_projection_kernel, workload, 3, distribution)
        assert violation is None, f"{distribution}: {violation}"


def test_a_kernel_that_swaps_two_heads_is_caught():
    def swapped(x, wq, wk, wv, head_dim):
        q, k, v = fused.qkv_projection_kernel(x, wq, wk, wv, head_dim)
        return q.flip(1), k, v

    workload = Workload(name="b1_t5", axes={"batch": 1, "tokens": 5})
    assert first_violation(SMALL, swapped, workload, 3, "normal") is not None
