"""Gate 4, tests: the target's tests, judged against BASE, fenced, with a timeout.

Pytest runs with BASE's configuration file and the tree as its rootdir, so a `pytest.ini` the
candidate adds cannot change what runs. Two sessions: BASE's tests (the test command with every
new test file ignored, so no new module is imported and none can change how the others judge),
where every test id BASE collects must still be collected and every test that passed at BASE
must pass; and the new test files alone, which must all pass. BASE's outcomes are recorded
once per run.
"""

import json
import shutil
import sys
import time
import tomllib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from gates.registration.commands import CommandResult, CommandRunner
from gates.registration.tree_changes import new_test_files, tree_changes
from gates.target import TargetConfig
from gates.verdict import Verdict

GATE = "tests"
SESSION_SCRIPT = Path(__file__).with_name("pytest_session.py")
NEW_TEST_OPTIONS = ("-q", "-p", "no:cacheprovider")
PYTEST_CONFIGS = (
    ("pytest.ini", "pytest"),
    (".pytest.ini", "pytest"),
    ("pyproject.toml", None),
    ("tox.ini", "pytest"),
    ("setup.cfg", "tool:pytest"),
)


class TestFailure(Exception):
    """One line saying why the tests do not pass."""


def check(
    base: Path,
    candidate: Path,
    config: TargetConfig,
    runner: CommandRunner,
    workdir: Path,
    base_record: Path,
    timeout: float = 300,
    new_tests_session: Callable[[], tuple[dict[str, str] | None, CommandResult]] | None = None,
) -> Verdict:
    """Run BASE's tests and the new tests on `candidate`, compared with BASE's outcomes;
    `new_tests_session` gives the new tests' session when another gate shares it."""
    started = time.monotonic()
    arguments = pytest_arguments(config.test_command)
    details: dict = {"command": list(config.test_command), "fence": runner.description}
    if arguments is None:
        return _plain(candidate, config, runner, timeout, details, started)
    workdir.mkdir(parents=True, exist_ok=True)
    new_tests = new_test_files(tree_changes(base, candidate))
    try:
        before = base_outcomes(base, arguments, runner, base_record, timeout)
        ignored = arguments + [f"--ignore={path}" for path in new_tests]
        own_new = [*NEW_TEST_OPTIONS, *new_tests]

        def session(name: str, args: list[str]):
            return lambda: run_session(base, candidate, args, runner, workdir / name, timeout)

        sessions = {"base_tests": session("base_tests", ignored)}
        if new_tests:
            sessions["new_tests"] = new_tests_session or session("new_tests", own_new)
        with ThreadPoolExecutor(max_workers=len(sessions)) as pool:
            jobs = {name: pool.submit(run) for name, run in sessions.items()}
            results = {name: job.result() for name, job in jobs.items()}
        details["new_test_files"] = new_tests
        details["outputs"] = {name: result[1].output[-4000:] for name, result in results.items()}
        summary = _judge(before, results, details)
    except TestFailure as failure:
        seconds = time.monotonic() - started
        return Verdict(
            gate=GATE, passed=False, summary=str(failure), details=details, seconds=seconds
        )
    seconds = time.monotonic() - started
    return Verdict(gate=GATE, passed=True, summary=summary, details=details, seconds=seconds)


def pytest_arguments(command: tuple[str, ...]) -> list[str] | None:
    """The pytest arguments of a `python -m pytest ...` or `pytest ...` command, else None."""
    argv = list(command)
    if argv[:1] in (["python"], ["python3"]) and argv[1:3] == ["-m", "pytest"]:
        return argv[3:]
    if argv[:1] == ["pytest"]:
        return argv[1:]
    return None


def record_base_outcomes(
    base: Path, config: TargetConfig, runner: CommandRunner, record: Path, timeout: float = 300
) -> dict[str, str] | None:
    """Run BASE's tests once for a run (before its first attempt, filling the runner's bytecode
    cache); None for a non-pytest command."""
    arguments = pytest_arguments(config.test_command)
    if arguments is None:
        return None
    try:
        return base_outcomes(base, arguments, runner, record, timeout, seed_bytecode=True)
    except TestFailure:
        return None  # the tests gate reports it, on every attempt


def base_outcomes(
    base: Path,
    arguments: list[str],
    runner: CommandRunner,
    record: Path,
    timeout: float,
    seed_bytecode: bool = False,
) -> dict[str, str]:
    """BASE's test ids and outcomes under the test command, recorded once per run."""
    stored = record / "outcomes.json"
    if not stored.is_file():
        outcomes, result = run_session(
            base, base, arguments, runner, record, timeout, seed_bytecode
        )
        if outcomes is None:
            raise TestFailure(f"BASE's tests could not be run: {failure_line(result)}")
        stored.write_text(json.dumps(outcomes, indent=1))
    return json.loads(stored.read_text())


def run_session(
    base: Path,
    tree: Path,
    arguments: list[str],
    runner,
    out: Path,
    timeout: float,
    seed_bytecode: bool = False,
) -> tuple[dict[str, str] | None, CommandResult]:
    """One pytest session in `tree` with BASE's configuration; (outcomes or None, result)."""
    out.mkdir(parents=True, exist_ok=True)
    options = [
        "--rootdir",
        str(tree),
        "--confcutdir",
        str(tree),
        "-c",
        str(base_config_copy(base, out)),
    ]
    argv = [sys.executable, str(SESSION_SCRIPT), str(out / "outcomes.json"), *options, *arguments]
    result = runner.run(argv, tree, writable=(out,), timeout=timeout, seed_bytecode=seed_bytecode)
    recorded = out / "outcomes.json"
    if result.timed_out:
        raise TestFailure(f"the tests ran past their {timeout:.0f} s timeout")
    if not recorded.is_file():
        return None, result
    document = json.loads(recorded.read_text())
    recorded.unlink()
    outcomes = document["outcomes"]
    if document["exit"] not in (0, 1, 5):
        outcomes["<session>"] = f"exit {document['exit']}"
    return outcomes, result


def _judge(before: dict[str, str], results: dict, details: dict) -> str:
    outcomes, result = results["base_tests"]
    if outcomes is None:
        raise TestFailure(f"BASE's tests did not run on the candidate: {failure_line(result)}")
    details["base_tests"] = _counts(outcomes)
    for test_id, outcome in before.items():
        now = outcomes.get(test_id)
        if now is None:
            raise TestFailure(f"BASE test {test_id} is no longer collected")
        if outcome == "passed" and now != "passed":
            raise TestFailure(f"BASE test {test_id} {now} (it passed at BASE)")
    for test_id, outcome in outcomes.items():
        if outcome not in ("passed", "skipped") and before.get(test_id) != outcome:
            raise TestFailure(f"{test_id} {outcome} in the session of BASE's tests")
    passed = sum(1 for test_id in before if outcomes[test_id] == "passed")
    summary = f"{passed} of BASE's {len(before)} tests pass as at BASE"
    if "new_tests" not in results:
        return summary + "; no new test files"
    new, result = results["new_tests"]
    if new is None:
        raise TestFailure(f"the new tests did not run: {failure_line(result)}")
    details["new_tests"] = _counts(new)
    failing = [test_id for test_id, outcome in new.items() if outcome != "passed"]
    if failing:
        raise TestFailure(f"new test {failing[0]} {new[failing[0]]} in its own session")
    if not new:
        raise TestFailure("the new test files hold no tests")
    return summary + f"; {len(new)} new tests pass in their own session"


def _counts(outcomes: dict[str, str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for outcome in outcomes.values():
        counts[outcome] = counts.get(outcome, 0) + 1
    return counts


def base_config_copy(base: Path, out: Path) -> Path:
    """A copy of BASE's pytest configuration file (or an empty one) in the gate's folder."""
    folder = out / "base-config"
    folder.mkdir(exist_ok=True)
    for name, section in PYTEST_CONFIGS:
        file = Path(base) / name
        if file.is_file() and _holds_pytest_config(file, section):
            copy = folder / name
            shutil.copyfile(file, copy)
            return copy
    empty = folder / "pytest.ini"
    empty.write_text("[pytest]\n")
    return empty


def _holds_pytest_config(file: Path, section: str | None) -> bool:
    """pytest.ini always counts; the others only with pytest's section in them."""
    text = file.read_text(errors="replace")
    if file.name in ("pytest.ini", ".pytest.ini"):
        return True
    if section is None:
        try:
            return "ini_options" in tomllib.loads(text).get("tool", {}).get("pytest", {})
        except tomllib.TOMLDecodeError:
            return False
    return f"[{section}]" in text


def _plain(candidate, config, runner, timeout, details, started) -> Verdict:
    """A test command that is not pytest: it must exit 0."""
    result = runner.run(list(config.test_command), candidate, timeout=timeout)
    details.update({"returncode": result.returncode, "output": result.output[-8000:]})
    seconds = time.monotonic() - started
    if result.timed_out:
        summary = f"the test command ran past its {timeout:.0f} s timeout"
    elif result.returncode != 0:
        summary = f"the test command failed (exit {result.returncode}): {failure_line(result)}"
    else:
        summary = f"`{' '.join(config.test_command)}` passed ({last_line(result)})"
    passed = not result.timed_out and result.returncode == 0
    return Verdict(gate=GATE, passed=passed, summary=summary, details=details, seconds=seconds)


def failure_line(result: CommandResult) -> str:
    """The first pytest FAILED/ERROR line, else the output's last line."""
    for line in result.output.splitlines():
        if line.startswith(("FAILED ", "ERROR ")):
            return line.strip()
    return last_line(result)


def last_line(result: CommandResult) -> str:
    lines = [line.strip() for line in result.output.splitlines() if line.strip()]
    return lines[-1].strip("= ") if lines else "no output"
