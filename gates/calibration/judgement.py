"""The judge's FP64 check of a calibrated task: a candidate's error against the FP64 oracle
may exceed the baseline's by the calibrated margin and no more, whatever the BF16 rule says."""

import torch

from gates.calibration.contract_file import OperatorCalibration
from operators.declaration import OperatorDeclaration
from operators.error_measure import relative_rms_error
from operators.fp64_oracle import fp64_outputs


def fp64_excess(
    calibration: OperatorCalibration,
    declaration: OperatorDeclaration,
    inputs: list[torch.Tensor],
    produced: list[torch.Tensor],
    params: dict | None = None,
    oracle: tuple[torch.Tensor, ...] | None = None,
) -> str | None:
    """Why the outputs err more against FP64 than the calibration admits, or None; the
    reference takes `params` (default: the declared ones, as the judge's own reference).
    `oracle`: its FP64 outputs on these inputs when the caller has them already."""
    if oracle is None:
        params = declaration.params if params is None else params
        oracle = fp64_outputs(declaration.reference, inputs, params)
    for spec, got, exact in zip(declaration.outputs, produced, oracle, strict=True):
        calibrated = calibration.output(spec.name)
        if calibrated is None:
            continue
        error = relative_rms_error(got, exact)
        if not error <= calibrated.tolerance:
            return (
                f"{spec.name}: relative RMS error against the FP64 reference {error:.3g} > "
                f"calibrated {calibrated.tolerance:.3g} (baseline {calibrated.baseline_error:.3g} "
                f"+ {calibration.margin:.0%})"
            )
    return None
