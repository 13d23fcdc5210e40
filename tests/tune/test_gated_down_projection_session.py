"""The fused gated_down_projection kernel that `kernels/sessions/tune_gated_down_projection.json`
submits: the session carries the kernel module as it is, and the kernel keeps the operator's
contract under the interpreter on small sizes (ragged rows, two batches, split-K with a ragged
last split, every distribution), the gate applied per batch row."""

import sys
from pathlib import Path

import pytest
import torch

from gates.tuning.launch_settings import with_point
from operators.catalog.checking import first_violation
from operators.catalog.gated_down_projection import DECLARATION
from operators.declaration import DISTRIBUTIONS, Axis, Workload

KERNELS = Path(__file__).resolve().parents[2] / "kernels"
sys.path.insert(0, str(KERNELS))

import gated_down_projection_fused as fused  # noqa: E402
import solution_session  # noqa: E402

SIZES = {"hidden": 80, "mlp": 96}
SMALL = DECLARATION.model_copy(
    update={
        "axes": tuple(
            Axis(name=a.name, kind="const", value=SIZES[a.name]) if a.kind == "const" else a
            for a in DECLARATION.axes
        )
    }
)


def workload(batch: int, tokens: int) -> Workload:
    return Workload(
        name=f"b{batch}_t{tokens}",
        axes={"batch": batch, "tokens": tokens, "rows": batch * tokens},
    )


def test_the_session_is_current():
    assert solution_session.main(["gated_down_projection", fused.__file__, "--check"]) == 0


@pytest.mark.parametrize("batch, tokens", [(1, 5), (2, 37)])
def test_the_kernel_meets_the_contract_on_every_distribution(batch, tokens):
    for distribution in DISTRIBUTIONS:
        violation = first_violation(
            SMALL, fused.gated_down_projection_kernel, workload(batch, tokens), 3, distribution
        )
        assert violation is None, f"{distribution}: {violation}"


@pytest.mark.parametrize("splits, block_k", [(1, 32), (3, 32), (2, 64)])
def test_every_split_meets_the_contract_and_sums_in_split_order(splits, block_k):
    """96 features: three 32-wide splits divide them, two 64-wide ones leave a ragged last."""
    tile = dict(fused.INTERPRETER_TILE, block_m=16, block_n=32, block_k=block_k, splits=splits)

    def split(*args):
        return fused.project(*args, tile)

    for distribution in DISTRIBUTIONS:
        violation = first_violation(SMALL, split, workload(2, 19), 5, distribution)
        assert violation is None, f"{distribution}: {violation}"
    inputs = SMALL.make_inputs(workload(2, 19), 2)
    assert torch.equal(split(*inputs), split(*inputs))


def test_split_spans_cover_the_features_once():
    assert fused.split_span(4096, 128, 4) == (4, 1024)
    assert fused.split_span(96, 64, 2) == (2, 64)  # the second split half masked
    assert fused.split_span(96, 64, 8) == (2, 64)  # no split without a K step
    assert fused.split_span(96, 32, 2) == (2, 64)


def test_a_kernel_that_gates_with_the_wrong_batch_row_is_caught():
    def first_gate(residual, activated, weight, gate):
        return fused.gated_down_projection_kernel(
            residual, activated, weight, gate[:1].expand_as(gate).contiguous()
        )

    assert first_violation(SMALL, first_gate, workload(2, 7), 3, "normal") is not None


def test_a_kernel_that_drops_a_split_is_caught():
    tile = dict(fused.INTERPRETER_TILE, block_m=16, block_n=32, block_k=32, splits=3)

    def dropped(residual, activated, weight, gate):
        activated = activated.clone()
        activated[:, 64:] = 0
        return fused.project(residual, activated, weight, gate, tile)

    assert first_violation(SMALL, dropped, workload(1, 5), 3, "normal") is not None


def test_every_regime_has_a_tile_inside_the_space():
    assert [name for name, _ in fused.REGIMES] == list(fused.TUNING)
    for tile in fused.TUNING.values():
        assert all(tile[key] in fused.TUNING_SPACE[key] for key in fused.TUNING_SPACE)
    assert [fused.regime(rows) for rows in (50, 400)] == list(fused.TUNING)


def test_the_sweep_writes_tuning_as_the_file_holds_it():
    source = Path(fused.__file__).read_text()
    assert with_point(source, fused.TUNING) == source
