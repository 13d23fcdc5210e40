"""The optimize batch's evidence: `evidence/report.md` a reviewer reads first and
`evidence/report.json`, from the batch's outcome."""

from pathlib import Path

from controller.kernel_ownership import batch_profile, kernel_workloads
from controller.optimize.batch import OptimizeOutcome
from controller.optimize.model_checks import REUSED_TIMING, ModelCheck
from controller.optimize.starting_points import shipped_submission, starting_point
from controller.runs.store import RunStore, write_atomic, write_json_atomic


def write_optimize_report(folder: Path, outcome: OptimizeOutcome) -> Path:
    """Write both files; returns the markdown's path."""
    evidence = folder / "evidence"
    write_json_atomic(evidence / "report.json", outcome.model_dump(mode="json"))
    path = evidence / "report.md"
    write_atomic(path, render(folder, outcome))
    return path


BUDGET_OVERRUN = 0.10
"""How far past its planned minutes a tune step may run before the report marks it over."""


def step_minutes(folder: Path) -> dict[str, float]:
    """Each finished step's wall minutes from the batch's journal: from the last time it
    started to its finish (a step a killed batch redid counts its last run)."""
    started: dict[str, float] = {}
    minutes: dict[str, float] = {}
    for event in RunStore(folder).events():
        step = event.get("step")
        if event["kind"] == "step_started":
            started[step] = event["at"]
        elif event["kind"] == "step_finished" and step in started:
            minutes[step] = (event["at"] - started[step]) / 60
    return minutes


def _minutes(used: float | None, planned: float | None) -> str:
    if used is None:
        return "-"
    if planned is None:
        return f"{used:.2f}"
    over = " over" if used > (1 + BUDGET_OVERRUN) * planned else ""
    return f"{used:.2f} ({planned:.2f}){over}"


def render(folder: Path, outcome: OptimizeOutcome) -> str:
    settings = outcome.settings
    lines = [
        f"# Optimize {folder.name}: {outcome.state}",
        "",
        f"Profile `{settings.profile}` for `{' '.join(settings.driver)}`; tuning budget "
        f"{settings.budget_minutes:g} minutes, agent `{settings.tune.agent}` on "
        f"`{settings.tune.device}`; verified on the example model `{settings.size}` at "
        f"batch {', '.join(map(str, settings.batches))}.",
        "",
        f"**Result:** {_result(outcome)}",
    ]
    if outcome.plan is not None:
        lines += [
            "",
            "## Operators by share of the model's step",
            "",
            f"Read from the {_mode_words(outcome.plan.profile_mode)}.",
            "",
            "| operator | us/step | share | calls/step | floor us/step | x floor | minutes "
            "| not tuned because |",
            "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
        ]
        lines += [
            f"| {row.operator} | {row.us_per_step:.1f} | {row.share_of_step:.1%} "
            f"| {row.calls_per_step:.1f} | {_floor(row)} "
            f"| {'-' if row.minutes is None else f'{row.minutes:.1f}'} | {row.reason} |"
            for row in outcome.plan.rows
        ]
        if any(row.floor_us is not None for row in outcome.plan.rows):
            lines += [
                "",
                "The floor is the larger of the bytes each call must move at the measured copy "
                "bandwidth and its reference's FLOPs at the GPU's dense BF16 tensor-core peak; "
                "time far above it is what remains to win.",
            ]
    if outcome.tuned:
        used = step_minutes(folder)
        planned = {row.operator: row.minutes for row in outcome.plan.tuned} if outcome.plan else {}
        lines += ["", "## Tuning", ""]
        lines += [
            "| operator | started from | shipped | status | speedup | minutes (plan) | export "
            "| reason |"
        ]
        lines += ["| --- | --- | --- | --- | ---: | ---: | --- | --- |"]
        lines += [
            f"| {row.operator} | {starting_point(settings, row.operator)} "
            f"| {shipped_submission(row.export)} | {row.status} | "
            f"{'-' if row.speedup is None else f'x{row.speedup:.3f}'} "
            f"| {_minutes(used.get(f'tune {row.operator}'), planned.get(row.operator))} "
            f"| {row.export or '-'} | {row.reason.replace('|', '/')} |"
            for row in outcome.tuned
        ]
        lines += [
            "",
            "Shipped: the submission the step exported (a template at its own tiles is not "
            "a tuned one). Minutes are each tune step's wall time (its preflight included) "
            "against the plan's; "
            f"a step more than {BUDGET_OVERRUN:.0%} past its minutes is marked over.",
        ]
    if outcome.verify is not None:
        lines += ["", "## Verify: every installed kernel", "", *_check(outcome.verify)]
    if outcome.decisions:
        lines += ["", "## Keep or drop, by the model", "", "| operator | kept | why |"]
        lines += ["| --- | --- | --- |"]
        lines += [
            f"| {row.operator} | {'yes' if row.kept else 'no'} | {row.reason} |"
            for row in outcome.decisions
        ]
    if outcome.kept is not None:
        lines += ["", "## Verify: the kept kernels", "", *_check(outcome.kept)]
    applies = kernel_workloads(batch_profile(folder, outcome.profile_folder))
    if applies:
        lines += [
            "",
            "## Where each kernel applies",
            "",
            "A kernel owns the workloads where it beat production with the evaluator's "
            "confidence and was slower than no role; elsewhere production runs.",
            "",
            "| kernel | owns | declines (production runs) |",
            "| --- | --- | --- |",
        ]
        lines += [f"| {name} | {owns} | {declines} |" for name, owns, declines in applies]
    return "\n".join(lines) + "\n"


def _result(outcome: OptimizeOutcome) -> str:
    if outcome.state == "interrupted":
        return "interrupted; resume with `controller optimize --resume` and this folder."
    if outcome.settings.plan_only:
        return "the plan only (`--plan-only`): nothing was tuned or installed."
    if outcome.published:
        return (
            f"installed {', '.join(outcome.published)} into `{outcome.profile_folder}`; "
            "`verify` passes."
        )
    if not outcome.installed:
        return "no kernel was promoted, so no profile was installed."
    if outcome.kept is not None and not outcome.kept.passed:
        return "the kept kernels do not pass `verify`; no profile was installed."
    return "every installed kernel was dropped by the model-level result; no profile installed."


def _check(check: ModelCheck) -> list[str]:
    numerics = check.numerics
    lines = [
        f"Numerics: {'pass' if numerics.passed else 'FAIL'}"
        + (f" ({numerics.error})" if numerics.error else "")
        + "."
    ]
    for verdict in numerics.outputs:
        if not verdict.passed:
            lines.append(f"- {verdict.name}: {'; '.join(verdict.failures)}")
    for operator, passed in sorted(check.alone_numerics.items()):
        lines.append(f"- {operator} alone: numerics {'pass' if passed else 'FAIL'}")
    lines += [f"- {note}" for note in numerics.notes if note.startswith(REUSED_TIMING)]
    if not check.timing:
        return [*lines, "", "Model time: not measured (needs CUDA)."]
    lines += ["", "| batch | profile | ms (median round) |", "| ---: | --- | ---: |"]
    for timing in check.timing:
        for name, ms in timing.median_ms.items():
            lines.append(f"| {timing.batch} | {timing.label(name)} | {ms:.3f} |")
    lines.append("")
    for timing in check.timing:
        lines += [f"- batch {timing.batch}: {timing.described(ratio)}" for ratio in timing.ratios]
    lines += [f"- FAIL: {failure}" for failure in check.speed_failures]
    return lines


def _floor(row) -> str:
    """`floor (bound) | ratio` cells, dashes where no floor was measured."""
    if row.floor_us is None or row.floor_us <= 0:
        return "- | -"
    return f"{row.floor_us:.1f} ({row.floor_bound}) | {row.us_per_step / row.floor_us:.1f}"


def _mode_words(mode: str) -> str:
    return "step as deployed, one replayed CUDA graph" if mode == "graph" else "eager step"
