"""Time one attempt's full registration gate set on the bundled example target.

Builds BASE from this repository's example target files and a candidate commit from the last
attempt of the scripted gelu_tanh session, probes BASE and records its test outcomes once (as a
run's preparation does; hidden configurations and direct calls drawn from a fixed nonce), then
times `check_attempt` with every gate run (wall, and the CPU its child processes used).
Run: `python -m gates.registration.benchmark [--fence NAME]`.
"""

import argparse
import json
import resource
import shutil
import tempfile
import time
from pathlib import Path

from gates.registration.call_sites import CallSite
from gates.registration.hidden import draw_hidden
from gates.registration.judged_commit import commit_workspace
from gates.registration.probes import cached_probe
from gates.registration.runners import make_runner
from gates.registration.suite import BASE_TESTS, GateSettings, RegistrationRequest, check_attempt
from gates.registration.target_tests import record_base_outcomes
from gates.target import load_target_config

REPOSITORY = Path(__file__).resolve().parents[2]
SESSION = REPOSITORY / "examples" / "sessions" / "register_gelu_tanh.json"
TARGET_FILES = ("pyproject.toml", "operators", "examples", "tests/conftest.py", "tests/registry")
IGNORED = shutil.ignore_patterns("__pycache__", ".pytest_cache", ".ruff_cache")
REQUEST = RegistrationRequest(
    operator="gelu_tanh",
    call_sites=(
        CallSite(path="examples/vision.py", qualname="VisionBlock.forward"),
        CallSite(path="examples/vision.py", qualname="VisionProjector.forward"),
    ),
)


def copy_target(destination: Path) -> Path:
    for name in TARGET_FILES:
        origin = REPOSITORY / name
        if origin.is_dir():
            shutil.copytree(origin, destination / name, ignore=IGNORED)
        elif origin.is_file():
            (destination / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(origin, destination / name)
    return destination


def apply_actions(tree: Path, actions: list[dict]) -> None:
    """Replay the session's `write` and `edit` actions (the ones that change files)."""
    for action in actions:
        file = tree / action.get("path", "")
        if action["tool"] == "write":
            file.parent.mkdir(parents=True, exist_ok=True)
            file.write_text(action["content"])
        elif action["tool"] == "edit":
            file.write_text(file.read_text().replace(action["old"], action["new"], 1))


def children_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fence", default="landlock", help="landlock, docker or unfenced")
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="register-benchmark-") as scratch:
        root = Path(scratch)
        runner = make_runner(arguments.fence, pycache_prefix=root / "pycache")
        base = copy_target(root / "base")
        candidate = copy_target(root / "candidate")
        apply_actions(candidate, json.loads(SESSION.read_text())["attempts"][-1])
        config = load_target_config(base)
        hidden = draw_hidden(config, "benchmark")
        sites = REQUEST.call_sites
        started = time.monotonic()
        cached_probe(
            base, root / "base-probe", config, REQUEST.operator, runner, hidden, sites, True
        )
        record_base_outcomes(base, config, runner, root / "base-probe" / BASE_TESTS)
        base_probe_s = time.monotonic() - started
        cpu_before, started = children_cpu_seconds(), time.monotonic()
        commit = commit_workspace(base, candidate, root / "candidate.git")
        verdicts = check_attempt(
            base,
            commit,
            REQUEST,
            config,
            runner,
            root / "work",
            root / "base-probe",
            GateSettings(all_gates=True),
            hidden,
        )
        result = {
            "fence": runner.description,
            "base_probe_s": round(base_probe_s, 1),
            "gate_set_wall_s": round(time.monotonic() - started, 1),
            "gate_set_child_cpu_s": round(children_cpu_seconds() - cpu_before, 1),
            "passed": all(v.passed for v in verdicts),
            "gates": {v.gate: [v.passed, round(v.seconds, 1)] for v in verdicts},
            "failed": {v.gate: v.summary for v in verdicts if not v.passed},
        }
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
