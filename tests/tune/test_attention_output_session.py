"""The fused attention_output kernel that `kernels/sessions/tune_attention_output.json`
submits: the session carries the kernel module as it is, and the kernel keeps the operator's
contract under the interpreter on small heads (ragged rows, two batches, every distribution),
reading attention's head layout in place."""

import sys
from pathlib import Path

import pytest
import torch

from gates.tuning.launch_settings import with_point
from operators.catalog.attention_output import DECLARATION
from operators.catalog.checking import first_violation
from operators.declaration import DISTRIBUTIONS, Axis, Workload

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))
sys.path.insert(0, str(BENCHMARKS.parent / "kernels"))

import attention_output_fused as fused  # noqa: E402
import solution_session  # noqa: E402

SIZES = {"query_heads": 3, "head_dim": 32, "merged": 96, "width": 80}
SMALL = DECLARATION.model_copy(
    update={
        "axes": tuple(
            Axis(name=a.name, kind="const", value=SIZES[a.name]) if a.kind == "const" else a
            for a in DECLARATION.axes
        )
    }
)


def test_the_session_is_current():
    assert solution_session.main(["attention_output", fused.__file__, "--check"]) == 0


@pytest.mark.parametrize("batch, tokens", [(1, 5), (2, 37)])
def test_the_kernel_meets_the_contract_on_every_distribution(batch, tokens):
    workload = Workload(name=f"b{batch}_t{tokens}", axes={"batch": batch, "tokens": tokens})
    for distribution in DISTRIBUTIONS:
        violation = first_violation(SMALL, fused.attention_output_kernel, workload, 3, distribution)
        assert violation is None, f"{distribution}: {violation}"


@pytest.mark.parametrize("splits", [3, 2])
def test_split_k_meets_the_contract_and_sums_in_split_order(splits):
    """Three splits share each tile (one head each); two do not divide the three heads' steps,
    so the launch takes one."""
    assert fused.split_count(splits, 96, 32) == (3 if splits == 3 else 1)
    tile = dict(fused.INTERPRETER_TILE, block_m=16, block_n=32, splits=splits)
    workload = Workload(name="b2_t19", axes={"batch": 2, "tokens": 19})

    def split(attended, weight):
        return fused.project(attended, weight, tile)

    for distribution in DISTRIBUTIONS:
        violation = first_violation(SMALL, split, workload, 5, distribution)
        assert violation is None, f"{distribution}: {violation}"
    attended, weight = SMALL.make_inputs(workload, 2)
    assert torch.equal(split(attended, weight), split(attended, weight))


def test_the_kernel_reads_a_head_layout_view_in_place():
    attended, weight = SMALL.make_inputs(Workload(name="t", axes={"batch": 2, "tokens": 9}), 1)
    strided = attended.transpose(1, 2).contiguous().transpose(1, 2)  # token-major memory
    got = fused.attention_output_kernel(strided, weight)
    assert torch.equal(got, fused.attention_output_kernel(attended, weight))


def test_a_kernel_that_swaps_two_heads_is_caught():
    def swapped(attended, weight):
        return fused.attention_output_kernel(attended.flip(1), weight)

    workload = Workload(name="b1_t5", axes={"batch": 1, "tokens": 5})
    assert first_violation(SMALL, swapped, workload, 3, "normal") is not None


def test_every_regime_has_a_tile_inside_the_space():
    assert [name for name, _ in fused.REGIMES] == list(fused.TUNING)
    for tile in fused.TUNING.values():
        assert all(tile[key] in fused.TUNING_SPACE[key] for key in fused.TUNING_SPACE)
    assert [fused.regime(rows) for rows in (50, 400, 576, 4608)] == list(fused.TUNING)


def test_the_sweep_writes_tuning_as_the_file_holds_it():
    source = Path(fused.__file__).read_text()
    assert with_point(source, fused.TUNING) == source
