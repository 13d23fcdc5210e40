"""The batched modulation_over_steps kernel that `kernels/sessions/tune_modulation_over_steps.json`
submits (the kernel template the model-free tuner starts from): the session carries the kernel
module and its sibling as they are, and the kernel keeps the operator's contract under the
interpreter on small widths (one row a step, an odd batch, more rows than one program keeps)."""

import json
import sys
from pathlib import Path

import pytest

from operators.catalog.checking import first_violation
from operators.catalog.modulation_over_steps import DECLARATION
from operators.declaration import DISTRIBUTIONS, Axis, Workload

KERNELS = Path(__file__).resolve().parents[2] / "kernels"
sys.path.insert(0, str(KERNELS))

import modulation_over_steps_batched as batched  # noqa: E402
import solution_session  # noqa: E402

SIZES = {"features": 96, "outputs": 80}
SMALL = DECLARATION.model_copy(
    update={
        "axes": tuple(
            Axis(name=a.name, kind="const", value=SIZES[a.name]) if a.kind == "const" else a
            for a in DECLARATION.axes
        )
    }
)


def test_the_session_is_current_and_ships_the_sibling_kernel():
    assert solution_session.main(["modulation_over_steps", batched.__file__, "--check"]) == 0
    actions = json.loads(solution_session.session_file("modulation_over_steps").read_text())
    written = [a["path"] for a in actions["attempts"][0] if a["tool"] == "write"]
    assert written == [
        "solution/operators/catalog/stacked_projection_fused.py",
        "solution/operators/catalog/modulation_over_steps.py",
    ]


@pytest.mark.parametrize("batch", [1, 3, 13])
def test_the_kernel_meets_the_contract_on_every_distribution(batch):
    workload = Workload(name=f"b{batch}", axes={"batch": batch})
    for distribution in DISTRIBUTIONS:
        violation = first_violation(
            SMALL, batched.modulation_over_steps_kernel, workload, 3, distribution
        )
        assert violation is None, f"{distribution}: {violation}"


def test_a_kernel_that_gives_a_step_its_neighbours_rows_is_caught():
    def shifted(*operands):
        outputs = batched.modulation_over_steps_kernel(*operands)
        return outputs[3:] + outputs[:3]

    workload = Workload(name="b3", axes={"batch": 3})
    assert first_violation(SMALL, shifted, workload, 3, "normal") is not None


def test_each_batch_of_the_model_takes_its_own_settings():
    """Batch 1's ten rows and batch 8's eighty are separate regimes, so the tuner can keep a
    point that wins at one without the other."""
    assert batched.regime(10 * 1) == "one_row_block" and batched.regime(10 * 8) == "row_blocks"
    assert set(batched.TUNING) == {name for name, _ in batched.REGIMES}
    for settings in batched.TUNING.values():
        assert all(settings[key] in batched.TUNING_SPACE[key] for key in settings)
