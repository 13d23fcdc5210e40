"""Start the parity probe on one tree and read its result; BASE's result is reused per run."""

import json
import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from gates.registration.call_sites import CallSite
from gates.registration.commands import CommandRunner
from gates.registration.hidden import HiddenDraw
from gates.registration.snapshots import SNAPSHOT_SCRIPT, RegistrySnapshot
from gates.target import TargetConfig

PROBE_SCRIPT = Path(__file__).with_name("parity_probe.py")
RESULT_FILE = "probe.json"


class ProbeResult(BaseModel):
    """What the probe saw in one tree; `failure` is set when the probe itself did not finish."""

    model_config = ConfigDict(frozen=True)

    folder: str
    failure: str | None = None
    import_error: str | None = None
    declaration: dict[str, Any] | None = None
    configurations: dict[str, dict[str, Any]] = {}
    direct_calls: dict[str, list[dict[str, Any]]] = {}
    """Per call site, one entry per drawn size: outputs and hits, or the error it raised."""
    registry_after_run: dict[str, Any] | None = None
    """Every operator described in the probe's process after the runs and the direct calls."""

    def snapshot_after_run(self) -> RegistrySnapshot:
        """The description taken after the runs, typed; `failure` where there is none."""
        if self.registry_after_run is None:
            return RegistrySnapshot(
                folder=self.folder, failure="the parity probe described no operator after its run"
            )
        try:
            return RegistrySnapshot.model_validate(
                {**self.registry_after_run, "folder": self.folder}
            )
        except (ValidationError, TypeError) as error:
            failure = f"the description after the parity run is malformed: {error}".splitlines()
            return RegistrySnapshot(folder=self.folder, failure=failure[0])

    @property
    def problem(self) -> str | None:
        """Why nothing can be compared, or None."""
        return self.failure or (
            f"importing the registry failed: {self.import_error}" if self.import_error else None
        )

    def configuration_problem(self, driver: str) -> str | None:
        entry = self.configurations.get(driver)
        if entry is None:
            return f"{driver} did not run"
        return f"{driver} raised {entry['error']}" if entry.get("error") else None

    def tensors(self, driver: str) -> Path:
        return Path(self.folder) / self.configurations[driver]["tensors"]


def comparison_problem(
    base: ProbeResult, candidate: ProbeResult, drivers: list[str] | tuple[str, ...]
) -> str | None:
    """Why BASE and the candidate cannot be compared (BASE's own problems marked), or None."""
    if base.problem:
        return f"BASE: {base.problem}"
    if candidate.problem:
        return candidate.problem
    for driver in drivers:
        problem = base.configuration_problem(driver)
        if problem:
            return f"BASE: {problem}"
        problem = candidate.configuration_problem(driver)
        if problem:
            return problem
    return None


def run_probe(
    tree: Path,
    out: Path,
    config: TargetConfig,
    operator: str,
    runner: CommandRunner,
    hidden: HiddenDraw | None = None,
    sites: list[CallSite] | tuple[CallSite, ...] = (),
    timeout: float = 300,
    seed_bytecode: bool = False,
) -> ProbeResult:
    """Run every parity configuration of `tree` (declared and hidden) and the direct calls of
    `sites`, in a fresh fenced interpreter."""
    hidden = hidden or HiddenDraw()
    out.mkdir(parents=True, exist_ok=True)
    plan = {
        "registry_module": config.registry_module,
        "operator": operator,
        "configurations": list(config.parity_configurations),
        "hidden": [c.model_dump() for c in hidden.configurations],
        "call_sites": [str(site) for site in sites],
        "call_sizes": list(hidden.call_sizes),
        "input_seed": hidden.input_seed,
        "snapshot_script": str(SNAPSHOT_SCRIPT),
    }
    (out / "plan.json").write_text(json.dumps(plan, indent=1))
    argv = [sys.executable, "-I", "-B", str(PROBE_SCRIPT), "--tree", str(tree), "--out", str(out)]
    argv += ["--plan", str(out / "plan.json")]
    result = runner.run(argv, tree, writable=(out,), timeout=timeout, seed_bytecode=seed_bytecode)
    (out / "probe.log").write_text(result.output)
    result_file = out / RESULT_FILE
    if result.timed_out:
        return ProbeResult(folder=str(out), failure=f"the parity probe ran past {timeout:.0f} s")
    if result.returncode != 0 or not result_file.is_file():
        tail = [line for line in result.output.splitlines() if line.strip()][-1:] or ["no output"]
        failure = f"the parity probe exited {result.returncode}: {tail[0]}"
        return ProbeResult(folder=str(out), failure=failure)
    return ProbeResult(folder=str(out), **json.loads(result_file.read_text()))


def cached_probe(
    tree: Path,
    out: Path,
    config: TargetConfig,
    operator: str,
    runner: CommandRunner,
    hidden: HiddenDraw | None = None,
    sites: list[CallSite] | tuple[CallSite, ...] = (),
    seed_bytecode: bool = False,
) -> ProbeResult:
    """BASE's probe, run once per run folder and read back on later attempts and on resume
    (`seed_bytecode`: BASE's run fills the runner's bytecode cache)."""
    result_file = out / RESULT_FILE
    if result_file.is_file():
        return ProbeResult(folder=str(out), **json.loads(result_file.read_text()))
    return run_probe(
        tree, out, config, operator, runner, hidden, sites, seed_bytecode=seed_bytecode
    )
