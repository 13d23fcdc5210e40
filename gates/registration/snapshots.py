"""Take one tree's registry snapshot in a fresh fenced interpreter and read it back, typed.

The snapshot script imports the tree's registry and describes every operator as JSON; the
controller only reads that JSON and digests the files it lists, so nothing the tree's code does
at import can take part in a comparison. BASE's snapshot is taken once per run.
"""

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from gates.registration.commands import CommandRunner
from gates.target import TargetConfig
from operators.declaration import OperatorDeclaration

SNAPSHOT_SCRIPT = Path(__file__).with_name("registry_snapshot.py")
SNAPSHOT_FILE = "snapshot.json"


class OperatorSnapshot(BaseModel):
    """One registered operator as its registry resolves it."""

    model_config = ConfigDict(frozen=True)

    declaration: dict[str, Any]
    reference: Any
    preferred: Any = None
    stock: Any = None
    other_implementations: dict[str, Any] = {}
    bound_in: list[str] = []
    resolved: dict[str, Any] = {}
    files: list[str] = []

    def typed_declaration(self) -> OperatorDeclaration:
        """The declaration's data validated again here (its callables are not carried over);
        ValueError in one line when it does not validate."""
        try:
            return OperatorDeclaration.model_validate({**self.declaration, "reference": _absent})
        except ValidationError as error:
            first = error.errors()[0]
            where = ".".join(str(part) for part in first["loc"])
            raise ValueError(
                f"the declaration does not validate: {where}: {first['msg']}"
            ) from None


class RegistrySnapshot(BaseModel):
    """Every operator one tree's registry resolves; `failure` when the snapshot did not finish."""

    model_config = ConfigDict(frozen=True)

    folder: str
    failure: str | None = None
    import_error: str | None = None
    profiles: list[str] = []
    operators: dict[str, OperatorSnapshot] = {}

    @property
    def problem(self) -> str | None:
        """Why nothing can be compared, or None."""
        return self.failure or (
            f"importing the registry failed: {self.import_error}" if self.import_error else None
        )


def take_snapshot(
    tree: Path, out: Path, config: TargetConfig, runner: CommandRunner, timeout: float = 300
) -> RegistrySnapshot:
    """Describe every operator of `tree`'s registry, in a fresh fenced interpreter."""
    out.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, "-I", "-B", str(SNAPSHOT_SCRIPT), "--tree", str(tree)]
    argv += ["--out", str(out), "--registry-module", config.registry_module]
    for module in driver_modules(config):
        argv += ["--also-import", module]
    result = runner.run(argv, tree, writable=(out,), timeout=timeout)
    (out / "snapshot.log").write_text(result.output)
    if result.timed_out:
        return RegistrySnapshot(folder=str(out), failure=f"the snapshot ran past {timeout:.0f} s")
    return _read(out, f"exited {result.returncode}: {_last_line(result.output)}")


def cached_snapshot(
    tree: Path, out: Path, config: TargetConfig, runner: CommandRunner
) -> RegistrySnapshot:
    """BASE's snapshot, taken once per run folder and read back on later attempts."""
    if (out / SNAPSHOT_FILE).is_file():
        return _read(out, "could not be read back")
    return take_snapshot(tree, out, config, runner)


def driver_modules(config: TargetConfig) -> list[str]:
    """The modules of the parity drivers (declared and hidden), imported by the snapshot so
    that what the model's code changes at import time is part of what it describes."""
    drivers = list(config.parity_configurations)
    if config.hidden_parity is not None:
        drivers.append(config.hidden_parity.driver)
    return sorted({driver.partition(":")[0] for driver in drivers})


def file_digests(tree: Path, files: list[str]) -> dict[str, str | None]:
    """sha256 of each listed file under `tree`, None where it is missing."""
    digests: dict[str, str | None] = {}
    for relative in files:
        path = Path(tree, relative)
        is_file = path.is_file() and not path.is_symlink()
        digests[relative] = hashlib.sha256(path.read_bytes()).hexdigest() if is_file else None
    return digests


def _absent(*inputs):
    raise AssertionError("the controller never runs a snapshot's reference")


def _read(out: Path, why: str) -> RegistrySnapshot:
    file = out / SNAPSHOT_FILE
    if not file.is_file():
        return RegistrySnapshot(folder=str(out), failure=f"the registry snapshot {why}")
    try:
        return RegistrySnapshot(folder=str(out), **json.loads(file.read_text()))
    except (json.JSONDecodeError, ValidationError, TypeError) as error:
        first = str(error).splitlines()[0]
        return RegistrySnapshot(
            folder=str(out), failure=f"the registry snapshot is malformed: {first}"
        )


def _last_line(output: str) -> str:
    lines = [line for line in output.splitlines() if line.strip()]
    return lines[-1] if lines else "no output"
