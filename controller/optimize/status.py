"""Where an optimize batch stands, read from its journal for `controller status`: an optimize
batch journals steps, not the attempts and transitions the other runs' status reads."""

import shlex
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from controller.optimize.batch import FLOW, OptimizeOutcome
from controller.optimize.decision import KernelDecision
from controller.optimize.model_checks import ModelCheck
from controller.optimize.plan import TuningPlan
from controller.optimize.settings import OptimizeSettings
from controller.optimize.steps import TuneOutcome
from controller.runs.manifest import Manifest
from controller.runs.store import RunStore

TUNE_PREFIX = "tune "


class OptimizeStatus(BaseModel):
    """The batch's state, the step it reached, and every step result the journal holds."""

    model_config = ConfigDict(frozen=True)

    run_id: str
    run_dir: str
    flow: Literal["optimize"] = FLOW
    state: Literal["created", "running", "interrupted", "finished"]
    reason: str | None = Field(None, description="why an interrupted batch stopped")
    step: str | None = Field(None, description="the last step started, None before the first")
    step_finished: bool = Field(False, description="whether that step's result is journaled")
    live_pid: str | None = Field(None, description="the process holding the batch's lock")
    elapsed_s: float = Field(0.0, description="active seconds over every process that ran it")
    outcome: OptimizeOutcome
    warnings: list[str] = []

    @property
    def kept(self) -> list[str]:
        return [row.operator for row in self.outcome.decisions if row.kept]


def optimize_status(store: RunStore, manifest: Manifest, warnings: list[str]) -> OptimizeStatus:
    """Fold the journal: finished when a `finished` event was written, running while a process
    holds the lock, otherwise interrupted (a journal with no event was never started)."""
    settings = OptimizeSettings.model_validate(manifest.work_item)
    events = store.events()
    live_pid = store.lock_holder()
    results: dict[str, object] = {}
    step, step_finished, reason = None, False, None
    for event in events:
        kind = event["kind"]
        if kind in ("step_started", "step_finished"):
            step, step_finished = event["step"], kind == "step_finished"
            if step_finished:
                results[step] = event["result"]
        elif kind == "interrupted":
            reason = event.get("reason") or "interrupted"
        elif kind == "resumed":
            reason = None
    finished = any(event["kind"] == "finished" for event in events)
    if finished:
        state = "finished"
    elif live_pid:
        state = "running"
    elif events:
        state = "interrupted"
        reason = reason or "its process was killed or crashed"
    else:
        state = "created"
    return OptimizeStatus(
        run_id=store.run_id,
        run_dir=str(store.run_dir),
        state=state,
        reason=None if state in ("finished", "running") else reason,
        step=step,
        step_finished=step_finished,
        live_pid=live_pid,
        elapsed_s=float(events[-1].get("elapsed_s", 0.0)) if events else 0.0,
        outcome=_outcome(state, settings, results),
        warnings=warnings,
    )


def _outcome(state: str, settings: OptimizeSettings, results: dict) -> OptimizeOutcome:
    """The outcome the batch's report would show, from the results journaled so far."""
    plan = results.get("plan")
    published = results.get("publish") or []
    return OptimizeOutcome(
        state=state,
        settings=settings,
        plan=TuningPlan.model_validate(plan) if plan else None,
        tuned=[
            TuneOutcome.model_validate(result)
            for name, result in results.items()
            if name.startswith(TUNE_PREFIX)
        ],
        installed=results.get("install") or [],
        verify=ModelCheck.model_validate(results["verify"]) if "verify" in results else None,
        decisions=[KernelDecision.model_validate(row) for row in results.get("decide") or []],
        kept=ModelCheck.model_validate(results["verify kept"])
        if "verify kept" in results
        else None,
        published=published,
        profile_folder=str(Path(settings.tuned_root) / settings.profile) if published else None,
    )


def status_lines(status: OptimizeStatus) -> list[str]:
    """The status as `controller status` prints it, one line per subject."""
    outcome = status.outcome
    reason = f" ({status.reason})" if status.reason else ""
    lines = [f"run {status.run_id}  flow {status.flow}  state {status.state}{reason}"]
    if status.step is None:
        lines.append("step: none started")
    else:
        done = "finished" if status.step_finished else "started, not finished"
        lines.append(f"step: {status.step} ({done})")
    lines.append(f"tuned: {_tuned(outcome)}")
    if outcome.installed:
        kernels = f"kernels: installed {', '.join(outcome.installed)}"
        if outcome.decisions:
            dropped = [row.operator for row in outcome.decisions if not row.kept]
            kernels += f"; kept {', '.join(status.kept) or 'none'}"
            kernels += f"; dropped {', '.join(dropped) or 'none'}"
        lines.append(kernels)
    lines.append(f"profile: {_profile(status)}")
    live = f"live (pid {status.live_pid})" if status.live_pid else "no process attached"
    lines.append(f"{status.elapsed_s:.1f} s active; {live}")
    if status.state == "interrupted":
        lines.append(f"resume with: controller optimize --resume {shlex.quote(status.run_dir)}")
    return lines


def _tuned(outcome: OptimizeOutcome) -> str:
    if outcome.plan is None:
        return "not planned yet"
    rows = [
        f"{row.operator} {row.status}" + (f" x{row.speedup:.3f}" if row.speedup else "")
        for row in outcome.tuned
    ]
    done = {row.operator for row in outcome.tuned}
    waiting = [row.operator for row in outcome.plan.tuned if row.operator not in done]
    if waiting:
        rows.append(f"not yet {', '.join(waiting)}")
    return ", ".join(rows) or "no operator is worth tuning"


def _profile(status: OptimizeStatus) -> str:
    outcome = status.outcome
    if outcome.published:
        return f"{', '.join(outcome.published)} published into {outcome.profile_folder}"
    if status.state != "finished":
        return "not published yet"
    if not outcome.installed:
        return "none published: no kernel was promoted"
    if outcome.kept is not None and not outcome.kept.passed:
        return "none published: the kept kernels do not pass verify"
    return "none published: the model-level result dropped every kernel"
