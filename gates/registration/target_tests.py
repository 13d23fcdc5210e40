"""Gate 4, tests: the target's own test command passes on the candidate, fenced, with a timeout."""

import time
from pathlib import Path

from gates.registration.commands import CommandResult, CommandRunner
from gates.target import TargetConfig
from gates.verdict import Verdict

GATE = "tests"


def check(
    candidate: Path, config: TargetConfig, runner: CommandRunner, timeout: float = 300
) -> Verdict:
    """Run `test_command` in the candidate tree under the runner's fence."""
    started = time.monotonic()
    result = runner.run(list(config.test_command), candidate, timeout=timeout)
    details = {
        "command": list(config.test_command),
        "fence": runner.description,
        "returncode": result.returncode,
        "output": result.output[-8000:],
    }
    seconds = time.monotonic() - started
    if result.timed_out:
        summary = f"the test command ran past its {timeout:.0f} s timeout"
        return Verdict(gate=GATE, passed=False, summary=summary, details=details, seconds=seconds)
    if result.returncode != 0:
        summary = f"the test command failed (exit {result.returncode}): {failure_line(result)}"
        return Verdict(gate=GATE, passed=False, summary=summary, details=details, seconds=seconds)
    summary = f"`{' '.join(config.test_command)}` passed ({last_line(result)})"
    return Verdict(gate=GATE, passed=True, summary=summary, details=details, seconds=seconds)


def failure_line(result: CommandResult) -> str:
    """The first pytest FAILED/ERROR line, else the output's last line."""
    for line in result.output.splitlines():
        if line.startswith(("FAILED ", "ERROR ")):
            return line.strip()
    return last_line(result)


def last_line(result: CommandResult) -> str:
    lines = [line.strip() for line in result.output.splitlines() if line.strip()]
    return lines[-1].strip("= ") if lines else "no output"
