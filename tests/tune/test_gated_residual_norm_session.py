"""The fused gated_residual_norm kernel that `kernels/sessions/tune_gated_residual_norm.json`
submits: the session carries the kernel module as it is, the kernel keeps the operator's
contract under the interpreter on every distribution and gives production's bits (it rounds
as production does), and kernels that modulate with the wrong batch row or leave the sum
unnormalised are caught."""

import sys
from pathlib import Path

import pytest
import torch

from gates.tuning.launch_settings import with_point
from operators import ops, use_kernel_profile
from operators.catalog.checking import first_violation
from operators.catalog.gated_residual_norm import DECLARATION
from operators.declaration import DISTRIBUTIONS, Axis, Workload

KERNELS = Path(__file__).resolve().parents[2] / "kernels"
sys.path.insert(0, str(KERNELS))

import gated_residual_norm_fused as fused  # noqa: E402
import solution_session  # noqa: E402

SMALL = DECLARATION.model_copy(
    update={
        "axes": tuple(
            Axis(name=a.name, kind="const", value=96) if a.kind == "const" else a
            for a in DECLARATION.axes
        )
    }
)


def workload(batch: int, tokens: int) -> Workload:
    return Workload(name=f"b{batch}_t{tokens}", axes={"batch": batch, "tokens": tokens})


def test_the_session_is_current():
    assert solution_session.main(["gated_residual_norm", fused.__file__, "--check"]) == 0


@pytest.mark.parametrize("batch, tokens", [(1, 5), (3, 7)])
def test_the_kernel_meets_the_contract_on_every_distribution(batch, tokens):
    for distribution in DISTRIBUTIONS:
        violation = first_violation(
            SMALL, fused.gated_residual_norm_kernel, workload(batch, tokens), 3, distribution
        )
        assert violation is None, f"{distribution}: {violation}"


def test_the_kernel_gives_productions_bits():
    inputs = SMALL.make_inputs(workload(2, 9), 4)
    with use_kernel_profile("none"):
        expected = ops.gated_residual_norm(*inputs)
    for got, want in zip(fused.gated_residual_norm_kernel(*inputs), expected, strict=True):
        assert torch.equal(got, want)


def test_a_kernel_that_modulates_with_the_wrong_batch_row_is_caught():
    def first_row(residual, update, gate, scale, shift, eps=1e-6):
        first = scale[:1].expand_as(scale).contiguous()
        return fused.gated_residual_norm_kernel(residual, update, gate, first, shift, eps)

    assert first_violation(SMALL, first_row, workload(2, 7), 3, "normal") is not None


def test_a_kernel_that_returns_the_unnormalised_sum_as_both_outputs_is_caught():
    def unnormalised(*inputs, eps=1e-6):
        hidden, _ = fused.gated_residual_norm_kernel(*inputs, eps)
        return hidden, hidden

    assert first_violation(SMALL, unnormalised, workload(2, 7), 3, "normal") is not None


def test_the_tuning_is_inside_the_space_and_written_as_the_file_holds_it():
    assert all(fused.TUNING[key] in fused.TUNING_SPACE[key] for key in fused.TUNING_SPACE)
    source = Path(fused.__file__).read_text()
    assert with_point(source, fused.TUNING) == source
