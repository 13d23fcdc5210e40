"""Starting a run and resuming one: freeze the manifest, or verify every identity it froze
against the stored run read once (`stored_run.read_stored_run`)."""

import datetime
import shlex
from pathlib import Path
from typing import Any

from controller.errors import ControllerError
from controller.gitrepo import commit_exists, resolve_commit
from controller.runs.identity import controller_source_digest, current_environment
from controller.runs.manifest import AgentChoice, FenceChoice, Manifest, RunLimits
from controller.runs.store import new_run_id
from controller.runs.stored_run import StoredRun

# Flows whose command is `controller <flow> run`; a run of another flow is resumed by its code.
FLOW_COMMANDS = ("register", "tune")


def resume_command(flow: str, run_dir: Path | str) -> str | None:
    """The command that resumes a run of `flow`, as the user would type it; None if none."""
    if flow not in FLOW_COMMANDS:
        return None
    return f"controller {flow} run --resume {shlex.quote(str(run_dir))}"


def new_manifest(
    *,
    flow: str,
    target: Path,
    base_ref: str,
    work_item: dict[str, Any],
    agent: AgentChoice,
    fence: FenceChoice,
    limits: RunLimits,
    gates: list[str],
    gate_settings: dict[str, Any] | None = None,
    environment: dict[str, str] | None = None,
) -> Manifest:
    """Freeze what a new run depends on; BASE is resolved to a full commit id now."""
    target = target.resolve()
    return Manifest(
        run_id=new_run_id(flow),
        created_at=datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        flow=flow,
        target=str(target),
        base_commit=resolve_commit(target, base_ref),
        work_item=work_item,
        agent=agent,
        fence=fence,
        limits=limits,
        gates=tuple(gates),
        gate_settings=gate_settings or {},
        controller_source_digest=controller_source_digest(),
        environment=environment if environment is not None else current_environment(),
    )


def verify_resumable(
    run: StoredRun,
    *,
    flow: str | None = None,
    environment: dict[str, str] | None = None,
    source_digest: str | None = None,
) -> Manifest:
    """Refuse, naming the field, if anything the run's manifest froze has changed here.

    `environment` and `source_digest` default to the current ones; tests pass their own.
    """
    name, manifest = run.run_id, run.manifest
    if flow is not None and manifest.flow != flow:
        raise ControllerError(
            f"cannot resume {name}: manifest field 'flow' is {manifest.flow!r}, not {flow!r}; "
            f"resume it with `{resume_command(manifest.flow, run.run_dir) or manifest.flow}`"
        )
    target = Path(manifest.target)
    if not target.is_dir():
        raise _changed(name, "target", f"{target} no longer exists")
    if not commit_exists(target, manifest.base_commit):
        raise _changed(name, "base_commit", f"{manifest.base_commit} is gone from {target}")
    source = source_digest if source_digest is not None else controller_source_digest()
    if source != manifest.controller_source_digest:
        raise _changed(name, "controller_source_digest", "the controller's source was edited")
    current = environment if environment is not None else current_environment()
    for key in sorted(manifest.environment.keys() | current.keys()):
        was, now = manifest.environment.get(key), current.get(key)
        if was != now:
            raise _changed(name, f"environment.{key}", f"{was!r} is now {now!r}")
    return manifest


def _changed(run: str, field: str, detail: str) -> ControllerError:
    return ControllerError(
        f"cannot resume {run}: manifest field '{field}' no longer matches ({detail}); "
        "restore it or start a new run"
    )
