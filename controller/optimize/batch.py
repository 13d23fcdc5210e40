"""An optimize batch from start to report, resumable at any point.

The folder `runs/optimize-<UTC>-<hex>/` is a run folder like every other (`RunStore`): a frozen
`manifest.json` (the settings in its work item, the controller's source and the environment),
an fsync'd `journal.jsonl`, `state.json`, a lock. Each step is journaled `step_started` before
its work and `step_finished`, with its result, after it; the work writes its files whole, so a
batch killed anywhere redoes at most the step it was in, and a finished step's result is read
back from the journal, never measured again. That is why a resumed batch reaches the profile
an uninterrupted one would have reached from the same measurements.

    profile -> capture -> plan -> calibrate -> tune <op> (largest share first) -> install
            -> verify (numerics; model time against none, stock and each kernel left out)
            -> decide (keep or drop each kernel) -> verify kept -> publish -> report

A batch `controller pack` carried to another machine comes without its captured inputs; right
after the capture step the resume records them again (`travel.py`).
"""

from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from controller.errors import ControllerError
from controller.optimize.decision import KernelDecision, decide
from controller.optimize.model_checks import (
    BASELINES,
    ModelCheck,
    install_staged,
    publish_kept,
    verify_all,
    verify_kept,
)
from controller.optimize.plan import TuningPlan, plan_tuning
from controller.optimize.settings import OptimizeSettings
from controller.optimize.starting_points import starting_point
from controller.optimize.steps import HOTSPOTS_FILE, OptimizeInterrupted, OptimizeSteps, TuneOutcome
from controller.optimize.travel import missing_fixtures, restore_fixtures
from controller.runs.journal import Journal
from controller.runs.progress import Progress
from controller.runs.store import RunStore, write_json_atomic

FLOW = "optimize"


class OptimizeOutcome(BaseModel):
    """Where the batch ended: every step's result, as the report shows them."""

    state: str
    settings: OptimizeSettings
    plan: TuningPlan | None = None
    tuned: list[TuneOutcome] = []
    installed: list[str] = []
    verify: ModelCheck | None = None
    decisions: list[KernelDecision] = []
    kept: ModelCheck | None = None
    published: list[str] = []
    profile_folder: str | None = None


class _Steps:
    """Runs each step once: its result comes from the journal if it finished before."""

    def __init__(self, journal: Journal, events: list[dict], progress: Progress) -> None:
        self.journal, self.progress = journal, progress
        self.finished = {e["step"]: e["result"] for e in events if e["kind"] == "step_finished"}

    def run(self, name: str, work: Callable[[], Any], line: Callable[[Any], str]) -> Any:
        if name in self.finished:
            return self.finished[name]
        self.journal.append("step_started", step=name)
        with self.progress.phase(f"optimize: {name}"):
            result = work()
        self.journal.append("step_finished", step=name, result=result)
        self.finished[name] = result
        self.progress.note(f"optimize: {name}: {line(result)}")
        return result


def run_optimize(folder: Path, steps: OptimizeSteps, progress: Progress) -> OptimizeOutcome:
    """Run (or resume) the batch in `folder` to its end; saves `interrupted` when stopped."""
    store = RunStore(folder)
    with store.locked():
        manifest = store.manifest()
        settings = OptimizeSettings.model_validate(manifest.work_item)
        journal = store.open_journal()
        events = store.events()
        if not events:
            journal.append(
                "created", manifest=manifest.model_dump(mode="json"), digest=manifest.digest()
            )
        else:
            journal.append("resumed", after=events[-1]["kind"])
        write_json_atomic(store.state_path, {"state": "running"})
        try:
            outcome = _optimize(store, settings, _Steps(journal, events, progress), steps)
        except (KeyboardInterrupt, OptimizeInterrupted) as error:
            journal.append("interrupted", reason=str(error) or "interrupted")
            write_json_atomic(store.state_path, {"state": "interrupted"})
            return OptimizeOutcome(state="interrupted", settings=settings)
        except ControllerError as error:  # this machine cannot go on (bad input): resumable
            journal.append("interrupted", reason=str(error))
            write_json_atomic(store.state_path, {"state": "interrupted"})
            raise
        if not any(event["kind"] == "finished" for event in events):
            journal.append("finished", published=outcome.published)
        write_json_atomic(store.state_path, {"state": outcome.state})
        return outcome


def _optimize(store: RunStore, settings, done: _Steps, steps: OptimizeSteps) -> OptimizeOutcome:
    folder = store.run_dir
    driver = settings.driver
    done.run("profile", lambda: steps.profile(driver, folder / "profile"), lambda _: "profiled")
    done.run("capture", lambda: steps.capture(driver, folder / "capture"), lambda _: "captured")
    missing = missing_fixtures(folder)
    if missing:  # packed for travel by `controller pack`: record them again
        with done.progress.phase("optimize: restore the captured inputs"):
            restored = restore_fixtures(folder, missing, lambda into: steps.capture(driver, into))
        done.journal.append("fixtures_restored", files=restored)
        done.progress.note(
            f"optimize: {restored} captured input files recorded again, digests equal"
        )
    plan = TuningPlan.model_validate(done.run("plan", lambda: _plan(folder, settings), _plan_line))
    outcome = OptimizeOutcome(state="finished", settings=settings, plan=plan)
    if settings.plan_only:
        return outcome
    planned = [row.operator for row in plan.tuned]
    if planned:
        done.run(
            "calibrate",
            lambda: steps.calibrate(folder / "capture", planned),
            lambda _: f"contracts of {', '.join(planned)} against FP64",
        )
    for row in plan.tuned:
        result = done.run(
            f"tune {row.operator}",
            lambda row=row: steps.tune(
                row.operator, row.minutes, folder / "capture", folder / "tune" / row.operator
            ).model_dump(mode="json"),
            lambda result, operator=row.operator: (
                f"{result['status']}{_speedup(result)} {result['reason']}".strip()
                + f"; started from {starting_point(settings, operator)}"
            ),
        )
        outcome.tuned.append(TuneOutcome.model_validate(result))
    exports = {row.operator: Path(row.export) for row in outcome.tuned if row.export}
    outcome.installed = done.run(
        "install",
        lambda: install_staged(folder, settings.profile, exports),
        lambda names: ", ".join(names) or "nothing was promoted",
    )
    if not outcome.installed:
        return outcome
    check = done.run(
        "verify",
        lambda: verify_all(folder, settings.profile, outcome.installed, exports, steps),
        _check_line,
    )
    outcome.verify = ModelCheck.model_validate(check)
    decisions = done.run(
        "decide",
        lambda: [
            item.model_dump(mode="json")
            for item in decide(
                outcome.installed,
                outcome.verify.numerics.passed,
                outcome.verify.alone_numerics,
                outcome.verify.timing,
            )
        ],
        lambda rows: "; ".join(f"{row['operator']} {row['reason']}" for row in rows),
    )
    outcome.decisions = [KernelDecision.model_validate(row) for row in decisions]
    kept = [row.operator for row in outcome.decisions if row.kept]
    if not kept:
        return outcome
    check = done.run(
        "verify kept",
        lambda: verify_kept(folder, settings.profile, kept, exports, outcome.verify, steps),
        _check_line,
    )
    outcome.kept = ModelCheck.model_validate(check)
    if not outcome.kept.passed:
        return outcome
    root = Path(settings.tuned_root)
    outcome.published = done.run(
        "publish",
        lambda: publish_kept(
            root, settings.profile, {name: exports[name] for name in kept}, folder, outcome.kept
        ),
        lambda names: f"{', '.join(names)} into {root / settings.profile}",
    )
    outcome.profile_folder = str(root / settings.profile)
    return outcome


def _plan(folder: Path, settings: OptimizeSettings) -> dict:
    from controller.profiling.hotspots import HotspotReport
    from operators import REGISTRY
    from operators.call_capture import load_capture

    report = HotspotReport.model_validate_json((folder / "profile" / HOTSPOTS_FILE).read_text())
    capture = load_capture(folder / "capture")
    captured = set(capture.counts_by_operator())
    tunable = {declaration.name for declaration in REGISTRY if declaration.preferred is not None}
    floors = _floors(capture) if settings.tune.device == "cuda" else None
    plan = plan_tuning(
        report, captured, tunable, settings.budget_minutes, settings.operators, floors
    )
    write_json_atomic(folder / "plan.json", plan.model_dump(mode="json"))
    return plan.model_dump(mode="json")


def _floors(capture) -> dict | None:
    """Each captured operator's floor on this GPU, from its measured copy bandwidth and its
    tensor-core peak; None where CUDA is not there."""
    import torch

    from controller.optimize.floors import DeviceRates, operator_floors, tensor_peak
    from gates.evaluator.device_rates import measure_bandwidth

    if not torch.cuda.is_available():
        return None
    name = torch.cuda.get_device_name()
    rates = DeviceRates(
        name=name,
        bandwidth_bytes_per_us=measure_bandwidth("cuda") / 1000.0,
        tensor_flops_per_us=tensor_peak(name),
    )
    return operator_floors(capture, rates)


def _plan_line(plan: dict) -> str:
    rows = [row for row in plan["rows"] if row["minutes"] is not None]
    chosen = ", ".join(f"{row['operator']} {row['minutes']:.1f} min" for row in rows)
    return f"(from the {plan.get('profile_mode', 'eager')} step) " + (
        chosen or "no operator is worth tuning"
    )


def _speedup(result: dict) -> str:
    return f" x{result['speedup']:.3f}" if result.get("speedup") else ""


def _check_line(check: dict) -> str:
    model = ModelCheck.model_validate(check)
    state = "numerics pass" if model.numerics.passed else "numerics FAIL"
    ratios = [
        timing.described(ratio)
        for timing in model.timing
        for ratio in timing.ratios
        if ratio.baseline in BASELINES
    ]
    return "; ".join([state, *ratios]) if ratios else f"{state}; not timed"


def refuse_changed(settings: OptimizeSettings, given: dict) -> None:
    """A resumed batch keeps its settings: name the first given one that differs (a tune-all
    option as `tune.<field>`)."""
    frozen = settings.model_dump(mode="json")
    frozen.update({f"tune.{field}": value for field, value in frozen["tune"].items()})
    for field, value in given.items():
        if value is not None and frozen.get(field) != value:
            raise ControllerError(
                f"cannot resume: optimize field {field!r} is {frozen.get(field)!r}, not "
                f"{value!r}; drop the option or start a new batch"
            )
