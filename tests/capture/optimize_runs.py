"""Optimize batches as the tests start them: the command line, the light fake machine, the
batch folder and its journal, and a child process that SIGKILLs itself mid-batch."""

import json
import os
from pathlib import Path

from optimize_fakes import FakeSteps

from controller.cli import build_parser
from controller.cli.optimize_command import run as run_optimize
from controller.runs.journal import KILL_AT_VARIABLE

US_PER_STEP = {
    "gated_residual_norm": 400.0,
    "rms_norm": 300.0,
    "rotate_qk": 200.0,
    "ada_rms_norm": 150.0,
    "split_kv_attention": 5.0,
}


def optimize_argv(tmp_path: Path, target: Path, *extra: str) -> list[str]:
    return [
        "optimize",
        "--profile",
        "fast",
        "--budget-minutes",
        "5",
        "--device",
        "cpu",
        "--unfenced",
        "--target",
        str(target),
        "--tuned-root",
        str(tmp_path / "tuned"),
        "--runs-dir",
        str(tmp_path / "runs"),
        *extra,
        "--",
        "controller.profiling.example_driver:forward",
        "tiny",
        "1",
    ]


def light_fake_steps(tiny_capture: Path) -> FakeSteps:
    """One kernel kept, one dropped: every step runs, with few installs (each costs 0.3 s)."""
    promoted = {"gated_residual_norm": 5.0, "rms_norm": -2.0}
    return FakeSteps(tiny_capture, US_PER_STEP, promoted)


def only_batch(runs: Path) -> Path:
    (folder,) = [path for path in runs.iterdir() if path.name.startswith("optimize-")]
    return folder


def journal_events(batch: Path) -> list[dict]:
    return [json.loads(line) for line in (batch / "journal.jsonl").read_text().splitlines()]


def forked(argv: list[str], steps: FakeSteps, kill_at: int) -> int:
    """Run the command in a forked child that SIGKILLs itself after its `kill_at`-th journal
    event; the child's status."""
    pid = os.fork()
    if pid == 0:
        code = 70
        try:
            os.environ[KILL_AT_VARIABLE] = str(kill_at)
            code = run_optimize(build_parser().parse_args(argv), steps=steps)
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return status
