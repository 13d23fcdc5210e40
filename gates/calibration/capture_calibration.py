"""Calibrate a capture: every selected operator measured, written as `calibration.json`.

Recalibrating some operators of a capture keeps the others' contracts when the capture is
the same one (its digest); a changed capture starts the file afresh.
"""

import contextlib
from pathlib import Path

import torch

from gates.calibration.contract_file import (
    CalibrationFile,
    capture_digest,
    load_calibration,
    utc_now,
    write_calibration,
)
from gates.calibration.measure import calibrate_operator
from gates.errors import GateError
from operators.call_capture import load_capture
from operators.environment import current_environment_identity
from operators.error_measure import MEASURE
from operators.registry import REGISTRY


def calibrate_capture(
    folder: Path, operators: list[str], margin: float, device: torch.device
) -> CalibrationFile:
    """Measure each operator on the capture's layouts and write the calibration beside it."""
    if margin < 0:
        raise GateError(f"--margin {margin}: give a margin of zero or more (0.25 is 25%)")
    capture = load_capture(folder)
    digest = capture_digest(folder)
    previous = None
    with contextlib.suppress(GateError):  # an unreadable calibration is replaced whole
        previous = load_calibration(folder)
    kept = previous.operators if previous and previous.capture_sha256 == digest else {}
    calibrated = dict(kept)
    for name in operators:
        layouts = [layout for layout in capture.layouts if layout.operator == name]
        calibrated[name] = calibrate_operator(
            REGISTRY.declaration(name), Path(folder), layouts, margin, device
        )
    calibration = CalibrationFile(
        capture_sha256=digest,
        environment=current_environment_identity().model_dump(),
        created=utc_now(),
        measure=MEASURE,
        operators=dict(sorted(calibrated.items())),
    )
    write_calibration(folder, calibration)
    return calibration
