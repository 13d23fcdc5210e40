"""A fake evaluator (timing faked only at the evaluator boundary), a tiny target repository,
scripted sessions and CLI arguments for tune-flow tests.

The fake reads directives from the solution's entry file: `# fake-evaluator: incorrect` makes
it report a contract break; `# fake-evaluator: factor=F` makes the candidate F times the
baseline's time. The incumbent's time comes from the incumbent's own directive. Round medians
carry a little deterministic noise, and the promotion verdict is the evaluator's real rule.
"""

import argparse
import hashlib
import json
import random
import re
import subprocess
from pathlib import Path

from gates.evaluator.promotion import promotion_verdict
from gates.evaluator.protocol import EvaluationResult
from gates.tasks.solution import load_solution

OPERATOR = "rms_norm"
ENTRY = "solution/operators/catalog/rms_norm.py"
ANCHOR = "TUNING = {"
ROUNDS = 5
NOISE = 0.004
DIRECTIVE = re.compile(r"# fake-evaluator: (\S+)")


class FakeEvaluator:
    """`evaluate(task, solution, device=, timeout=, incumbent=)` without running anything."""

    def __init__(self, noise_seed: int = 0) -> None:
        self.noise_seed = noise_seed
        self.calls: list[dict] = []

    def __call__(self, task, solution, device="cpu", timeout=0.0, incumbent=None):
        loaded = load_solution(Path(solution))
        self.calls.append({"solution": str(solution), "incumbent": incumbent})
        directive = _directive(loaded)
        common = {"task": str(task), "operator": loaded.definition, "solution": loaded.name}
        if directive == "incorrect":
            return EvaluationResult(
                **common,
                device=device,
                status="INCORRECT_NUMERICAL",
                reason="y: 17 of 51200 elements outside the contract at workload action_b1 "
                "(worst |got-ref| 0.5 where atol 0.00098)",
            )
        if device != "cuda":  # as the real evaluator: correctness only, nothing timed
            return EvaluationResult(**common, device=device, status="PASSED", cases_checked=43)
        roles = {"baseline": 1.0, "candidate": _factor(directive)}
        if incumbent is not None:
            roles["incumbent"] = _factor(_directive(load_solution(Path(incumbent))))
        timing = fake_timing(task, roles, f"{loaded.digest()}-{self.noise_seed}")
        return EvaluationResult(
            **common, device=device, status="PASSED", cases_checked=43, timing=timing
        )


def fake_timing(task, roles: dict[str, float], seed: str) -> dict:
    """A timing report shaped like the evaluator's, with its real promotion verdict."""
    generator = random.Random(hashlib.sha256(seed.encode()).hexdigest())
    report = {"workloads": {}}
    for index, (name, weight) in enumerate(_workloads(Path(task))):
        base = 1.5 * (index + 1)
        row = {"weight": weight, "bytes": 1000, "floor_us": base / 4}
        for role, factor in roles.items():
            medians = [base * factor * (1 + generator.uniform(-NOISE, NOISE)) for _ in range(5)]
            row[f"{role}_round_medians_us"] = medians
            row[f"{role}_median_us"] = sorted(medians)[2]
            row[f"{role}_spread"] = NOISE
        row["speedup"] = row["baseline_median_us"] / row["candidate_median_us"]
        report["workloads"][name] = row
    verdict = promotion_verdict(report, list(roles))  # a typed model or, earlier, a dict
    report["promotion"] = (
        verdict.model_dump(mode="json") if hasattr(verdict, "model_dump") else verdict
    )
    return report


def _workloads(task: Path) -> list[tuple[str, float]]:
    rows = []
    for line in (task / "workloads.jsonl").read_text().splitlines():
        if line.strip():
            trace = json.loads(line)
            uuid = trace["workload"]["uuid"]
            rows.append((uuid.split("-", 1)[-1], float(trace.get("weight", 1.0) or 1.0)))
    return rows


def _directive(solution) -> str:
    entry = solution.spec.entry_file
    source = next(s.content for s in solution.sources if s.path == entry)
    found = DIRECTIVE.search(source)
    return found.group(1) if found else "factor=1.0"


def _factor(directive: str) -> float:
    return float(directive.split("=", 1)[1]) if directive.startswith("factor=") else 1.0


def mark(directive: str) -> dict:
    """A scripted edit that puts one directive into the kernel's entry file."""
    return {
        "tool": "edit",
        "path": ENTRY,
        "old": ANCHOR,
        "new": f"# fake-evaluator: {directive}\n{ANCHOR}",
    }


def write_script(path: Path, *attempts: list[dict]) -> Path:
    path.write_text(json.dumps({"attempts": list(attempts)}))
    return path


def make_target(path: Path) -> Path:
    """A real one-commit git repository whose pyproject.toml carries the ruff settings."""
    path.mkdir(parents=True)
    (path / "pyproject.toml").write_text(
        '[tool.ruff]\nline-length = 100\ntarget-version = "py311"\n\n'
        '[tool.ruff.lint]\nselect = ["E", "F", "W", "I", "B", "UP", "SIM"]\nignore = ["E731"]\n'
    )
    for command in (
        ["init", "-q", "-b", "main"],
        ["add", "-A"],
        ["-c", "user.name=t", "-c", "user.email=t@localhost", "commit", "-qm", "base"],
    ):
        subprocess.run(["git", "-C", str(path), *command], check=True, capture_output=True)
    return path


def tune_arguments(runs_dir: Path, target: Path | None = None, **options) -> argparse.Namespace:
    """The namespace `controller tune run` parses, with the given options set."""
    from controller.cli import build_parser

    argv = ["tune", "run", "--runs-dir", str(runs_dir)]
    if target is not None:
        argv += ["--target", str(target)]
    for name, value in options.items():
        flag = "--" + name.replace("_", "-")
        argv += [flag] if value is True else [flag, str(value)]
    return build_parser().parse_args(argv)


def only_run(runs_dir: Path) -> Path:
    (run_dir,) = [path for path in runs_dir.iterdir() if path.name.startswith("tune-")]
    return run_dir


def journal(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "journal.jsonl").read_text().splitlines()]
