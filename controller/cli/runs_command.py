"""`controller status RUN` and `controller report RUN`: read a run folder, never change it."""

import json
import sys
from pathlib import Path

from controller.cli.run_options import DEFAULT_RUNS_DIR


def add_parser(subparsers) -> None:
    status = subparsers.add_parser(
        "status",
        help="where a run stands: state, attempts, spend, whether a process is working on it",
        description="Where a run (register, tune, tune-all batch or optimize) stands: its state, "
        "attempts and their verdicts, spend, the incumbent's speedup where timed, and whether a "
        "process is working on it. Reads the run folder; changes nothing.",
        epilog="example: controller status runs/tune-20261206T082215Z-18d1ac",
    )
    report = subparsers.add_parser(
        "report",
        help="a run's evidence report (built from the run folder as it is now)",
        description="Print a run's evidence report (Markdown, as evidence/report.md holds it), "
        "or with --html write its self-contained review page and print the page's path.",
        epilog="example: controller report runs/register-20261206T080000Z-1a2b3c --html",
    )
    for parser, handler in ((status, show_status), (report, show_report)):
        parser.add_argument(
            "run", metavar="RUN", help="run folder, or run id under --runs-dir (e.g. tune-...)"
        )
        parser.add_argument("--runs-dir", type=Path, default=DEFAULT_RUNS_DIR, metavar="DIR")
        parser.add_argument("--json", action="store_true", help="print machine-readable JSON")
        parser.set_defaults(func=handler)
    report.add_argument(
        "--html",
        action="store_true",
        help="write the run's (or a tune-all batch's) self-contained review page and print "
        "its path",
    )


def show_status(arguments) -> int:
    from controller.runs.statemachine import TERMINAL_STATES
    from controller.runs.store import RunStore

    store = RunStore.open(arguments.run, arguments.runs_dir)
    manifest, warnings = store.manifest_for_reading()
    if manifest.flow == "optimize":
        return show_optimize_status(store, manifest, warnings, arguments.json)
    status = run_status(store)
    _warn(status["warnings"])
    if arguments.json:
        print(json.dumps(status, indent=2, sort_keys=True))
        return 0
    spend, limits = status["spend"], status["limits"]
    reason = f" ({status['reason']})" if status["reason"] else ""
    live = f"live (pid {status['live_pid']})" if status["live_pid"] else "no process attached"
    print(f"run {status['run_id']}  flow {status['flow']}  state {status['state']}{reason}")
    print(
        f"attempts {spend['attempts']} of {limits['max_attempts']}: "
        + (", ".join(f"attempt {a['number']} {a['status']}" for a in status["attempts"]) or "none")
    )
    print(
        f"spent {spend['tokens']} tokens, ${spend['dollars']:.4f}, {spend['calls']} calls "
        f"({spend['failed_calls']} failed), {spend['elapsed_s']:.1f} s active; {live}"
    )
    if status.get("tune"):
        print(status["tune"]["line"])
    if status["state"] not in TERMINAL_STATES and not status["live_pid"]:
        from controller.runs.launch import resume_command

        command = resume_command(status["flow"], store.run_dir)
        print(f"resume with: {command}" if command else "resume it with the code that started it")
    return 0


def show_optimize_status(store, manifest, warnings: list[str], as_json: bool) -> int:
    """An optimize batch journals steps, not attempts: its own status, printed alike."""
    from controller.optimize.status import optimize_status, status_lines

    status = optimize_status(store, manifest, warnings)
    _warn(status.warnings)
    if as_json:
        print(json.dumps(status.model_dump(mode="json"), indent=2, sort_keys=True))
    else:
        print("\n".join(status_lines(status)))
    return 0


def run_status(store) -> dict:
    """The status as data: state from the journal, spend, attempts, and the lock holder.

    With no process attached, an attempt the journal leaves running was cut short."""
    manifest, warnings = store.manifest_for_reading()
    state = store.state()
    history = store.history()
    live_pid = store.lock_holder()
    tune = None
    if manifest.flow == "tune":
        from controller.flows.tune_incumbents import tune_status

        tune = tune_status(store)
    return {
        "run_id": store.run_id,
        "run_dir": str(store.run_dir),
        "flow": manifest.flow,
        "state": state.state,
        "reason": state.reason,
        "limit": state.limit,
        "attempt": state.attempt,
        "resume_state": state.resume_state,
        "live_pid": live_pid,
        "spend": history.spend.model_dump(mode="json") | {"tokens": history.spend.tokens},
        "limits": manifest.limits.model_dump(mode="json"),
        "attempts": [
            {"number": a.number, "status": _attempt_status(a.status, live_pid)}
            for a in history.attempts
        ],
        "warnings": warnings,
        "tune": tune,
    }


def show_report(arguments) -> int:
    from controller.runs.evidence import build_report, render_markdown
    from controller.runs.store import RunStore

    if arguments.html:
        return write_page(arguments.run, arguments.runs_dir)
    store = RunStore.open(arguments.run, arguments.runs_dir)
    manifest, warnings = store.manifest_for_reading()
    _warn(warnings)
    report = build_report(store, manifest)
    if arguments.json:
        print(json.dumps(report, indent=2, sort_keys=True, default=str))
    else:
        print(render_markdown(report))
        if manifest.flow == "tune":
            from controller.flows.tune_evidence import tuning_markdown

            print(tuning_markdown(store, manifest.gate_settings.get("device", "cpu")))
    return 0


def write_page(run: str, runs_dir: Path) -> int:
    """The review page of a run folder, or of a batch folder (which has no manifest)."""
    from controller.review_page import write_html_report
    from controller.runs.store import RunStore

    folder = Path(run) if Path(run).is_dir() else runs_dir / run
    if not (folder / "batch.json").is_file():
        folder = RunStore.open(run, runs_dir).run_dir
    print(write_html_report(folder))
    return 0


def _attempt_status(status: str, live_pid: str | None) -> str:
    return "interrupted" if status == "running" and not live_pid else status


def _warn(warnings: list[str]) -> None:
    for warning in warnings:
        print(f"controller: warning: {warning}", file=sys.stderr)
