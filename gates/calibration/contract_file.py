"""The calibrated contract file, `calibration.json` beside a capture: per operator and output,
the baseline's error against the FP64 oracle, the tolerance derived from it, what it was
measured on, and the identities it holds for (capture, reference source, environment).

A candidate's error against the FP64 oracle (`error_measure.relative_rms_error`) must stay at
or below `tolerance = (1 + margin) * baseline_error`, where the baseline error is the larger of
the production kernel's and the reference's in the model's dtype.
"""

import datetime
import hashlib
import os
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from gates.errors import GateError
from gates.tasks.rendering import reference_source
from operators.call_capture import CAPTURE_FILE, load_capture
from operators.declaration import OperatorDeclaration
from operators.registry import REGISTRY

CALIBRATION_FILE = "calibration.json"
PACKAGE_FILE = "calibrated_contract.json"
"""The operator's calibration as a task package carries it, for the judge."""
DEFAULT_MARGIN = 0.25
"""A candidate may err up to 25% more than the baseline: the figure of a correct kernel varies
by a few percent between draws of one layout (the judge draws other sets than calibration),
one BF16 step off on every element errs about 3.5 times the baseline, and three BF16
roundings where the baseline has one about 1.5 times."""


class OutputCalibration(BaseModel):
    """One output's baseline errors against FP64 (relative RMS, the largest over every input
    set) and the tolerance they give."""

    model_config = ConfigDict(frozen=True)

    output: str
    production_error: float = Field(ge=0, description="the production kernel's error")
    reference_error: float = Field(ge=0, description="the reference's error in the model dtype")
    baseline_error: float = Field(ge=0, description="the larger of the two")
    tolerance: float = Field(ge=0, description="(1 + margin) * baseline_error")
    max_absolute_error: float = Field(ge=0, description="the baseline's largest |x - fp64|")


class MeasuredOn(BaseModel):
    """The input sets the errors were measured on."""

    model_config = ConfigDict(frozen=True)

    layouts: list[str] = Field(description="captured layout keys, each in its captured strides")
    fixtures: bool = Field(description="each layout's captured fixture (the model's inputs)")
    distribution: str = Field(description="how the drawn sets were drawn (the declaration's)")
    seeds: list[int] = Field(description="seeds of the drawn sets, per layout")
    device: str


class OperatorCalibration(BaseModel):
    """One operator's calibrated contract, valid while its reference source is unchanged."""

    model_config = ConfigDict(frozen=True)

    operator: str
    reference_sha256: str = Field(description="digest of the reference source as packaged")
    margin: float = Field(ge=0)
    measured_on: MeasuredOn
    outputs: list[OutputCalibration]

    def output(self, name: str) -> OutputCalibration | None:
        return next((item for item in self.outputs if item.output == name), None)


class CalibrationFile(BaseModel):
    """What `controller calibrate` writes beside a capture."""

    model_config = ConfigDict(frozen=True)

    capture_sha256: str = Field(description="digest of capture.json and every fixture")
    environment: dict[str, str] = Field(description="python, torch, triton, GPU it ran on")
    created: str
    measure: str = Field(description="the error measure, in words")
    operators: dict[str, OperatorCalibration]


def reference_digest(declaration: OperatorDeclaration) -> str:
    """The digest of the reference as task packages carry it (its source and helpers)."""
    return hashlib.sha256(reference_source(declaration).encode()).hexdigest()


def capture_digest(folder: Path) -> str:
    """The digest of a capture's description and the fixtures it names (remembered while no
    file's size or modification time changes: a model's fixtures can weigh a gigabyte)."""
    folder = Path(folder).resolve()
    fixtures = [folder / layout.fixture for layout in load_capture(folder).layouts]
    paths = [folder / CAPTURE_FILE, *fixtures]
    stamp = tuple((str(p), p.stat().st_size, p.stat().st_mtime_ns) for p in paths)
    if stamp not in _DIGESTS:
        digest = hashlib.sha256()
        for path in paths:
            digest.update(path.relative_to(folder).as_posix().encode())
            digest.update(path.read_bytes())
        _DIGESTS[stamp] = digest.hexdigest()
    return _DIGESTS[stamp]


_DIGESTS: dict[tuple, str] = {}


def load_calibration(folder: Path) -> CalibrationFile | None:
    """The capture's calibration, or None where `controller calibrate` has not run."""
    path = Path(folder) / CALIBRATION_FILE
    if not path.is_file():
        return None
    try:
        return CalibrationFile.model_validate_json(path.read_text())
    except ValidationError as error:
        first = str(error).splitlines()[0]
        raise GateError(
            f"{path} is not a calibration ({first}); run `controller calibrate` again"
        ) from None


def write_calibration(folder: Path, calibration: CalibrationFile) -> Path:
    """Write `calibration.json` atomically (synced temporary file, then rename)."""
    path = Path(folder) / CALIBRATION_FILE
    staged = path.with_name(f".{CALIBRATION_FILE}.tmp")
    with open(staged, "w") as handle:
        handle.write(calibration.model_dump_json(indent=2) + "\n")
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(staged, path)
    return path


def current_calibration(
    folder: Path, declaration: OperatorDeclaration
) -> OperatorCalibration | None:
    """The operator's calibrated contract if the capture has one; refuses in one line when it
    was measured on another capture or the reference's source changed since."""
    calibration = load_calibration(folder)
    if calibration is None or declaration.name not in calibration.operators:
        return None
    recalibrate = f"run `controller calibrate {folder}` again"
    if calibration.capture_sha256 != capture_digest(folder):
        raise GateError(f"{folder}: the capture changed since it was calibrated; {recalibrate}")
    if calibration.operators[declaration.name].reference_sha256 != reference_digest(declaration):
        raise GateError(
            f"the reference of {declaration.name} changed since {folder} was calibrated; "
            f"{recalibrate}"
        )
    return calibration.operators[declaration.name]


def calibrated_operators(folder: Path, names: list[str]) -> list[str]:
    """Which of `names` the capture holds a current calibration for; refuses in one line on
    the first stale one, before anything is written."""
    return [name for name in names if current_calibration(folder, REGISTRY.declaration(name))]


def package_calibration(task_folder: Path) -> OperatorCalibration | None:
    """The calibration a task package carries, or None for an uncalibrated task."""
    path = Path(task_folder) / PACKAGE_FILE
    if not path.is_file():
        return None
    return OperatorCalibration.model_validate_json(path.read_text())


def utc_now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
