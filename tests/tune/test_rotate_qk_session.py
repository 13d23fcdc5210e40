"""The hand-written rotate_qk kernel that `kernels/sessions/tune_rotate_qk.json` submits:
the session carries the kernel module as it is, and the kernel is bit-exact under the
interpreter at scaled-down sizes, at a power-of-two head dimension (no column mask) and at one
that is not (the masked halves)."""

import sys
from pathlib import Path

import pytest

from operators.catalog import rotate_qk
from operators.catalog.checking import first_violation, scaled_down
from operators.declaration import DISTRIBUTIONS, Axis

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))
sys.path.insert(0, str(BENCHMARKS.parent / "kernels"))

import rotate_qk_halves as halves  # noqa: E402
import solution_session  # noqa: E402


def test_the_session_is_current():
    assert solution_session.main(["rotate_qk", halves.__file__, "--check"]) == 0


SCALED = scaled_down(rotate_qk.DECLARATION)
"""head_dim 48: the halves (24) are masked inside a block of 32."""
POWER_OF_TWO = SCALED.model_copy(
    update={
        "axes": tuple(
            Axis(name=a.name, kind="const", value=32) if a.name == "head_dim" else a
            for a in SCALED.axes
        )
    }
)
"""head_dim 32: the halves fill their blocks, no column mask."""


@pytest.mark.parametrize("declaration", [POWER_OF_TWO, SCALED], ids=["head_dim32", "head_dim48"])
def test_the_kernel_is_bit_exact_on_every_distribution(declaration):
    for workload in declaration.workloads:
        for distribution in DISTRIBUTIONS:
            violation = first_violation(
                declaration, halves.rotate_qk_triton, workload, 2, distribution
            )
            assert violation is None, f"{workload.name}, {distribution}: {violation}"


def test_a_kernel_that_swaps_the_halves_is_caught():
    def swapped(q, k, cos, sin):
        q_out, k_out = halves.rotate_qk_triton(q, k, cos, sin)
        return q_out.roll(q.shape[-1] // 2, dims=-1), k_out

    workload = POWER_OF_TWO.workloads[0]
    assert first_violation(POWER_OF_TWO, swapped, workload, 2, "normal") is not None
