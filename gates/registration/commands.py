"""How the gates run target code: fenced by default, in a fresh process, with a timeout.

Candidate code (its tests, its model) never runs inside the controller's process; every gate
that executes it goes through a `CommandRunner`.
"""

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Protocol

from pydantic import BaseModel, ConfigDict

OUTPUT_LIMIT = 20_000


class CommandResult(BaseModel):
    """What one fenced command did: exit status, the tail of its output, its wall time."""

    model_config = ConfigDict(frozen=True)

    returncode: int
    output: str
    seconds: float
    timed_out: bool = False


class CommandRunner(Protocol):
    """Runs argv in `cwd`, allowed to write only `cwd` and `writable`, killed at `timeout`."""

    description: str

    def run(
        self, argv: list[str], cwd: Path, *, writable: tuple[Path, ...] = (), timeout: float = 600
    ) -> CommandResult: ...


def python_argv(argv: list[str] | tuple[str, ...]) -> list[str]:
    """A target command with `python` meaning the controller's own interpreter."""
    argv = list(argv)
    if argv and argv[0] in ("python", "python3"):
        argv[0] = sys.executable
    return argv


def target_environment(tree: Path, home: Path) -> dict[str, str]:
    """The environment target code runs with: its own tree first on the path, profile none,
    no bytecode written and a private cache prefix (so no `__pycache__` in the tree is read)."""
    environment = {
        "PATH": os.path.dirname(sys.executable) + os.pathsep + "/usr/bin:/bin",
        "HOME": str(home),
        "TMPDIR": str(home),
        "PYTHONPATH": str(tree),
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONPYCACHEPREFIX": str(home / "pycache"),
        "PYTHONHASHSEED": "0",
        "CONTROLLER_KERNEL_PROFILE": "none",
        "LANG": "C.UTF-8",
    }
    for name in ("TRITON_INTERPRET", "OMP_NUM_THREADS", "CUDA_VISIBLE_DEVICES"):
        if name in os.environ:
            environment[name] = os.environ[name]
    return environment


class UnfencedRunner:
    """Runs commands as plain subprocesses in their own process group (for --unfenced)."""

    description = "unfenced"

    def run(
        self, argv: list[str], cwd: Path, *, writable: tuple[Path, ...] = (), timeout: float = 600
    ) -> CommandResult:
        started = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="gate-home-") as home:
            process = subprocess.Popen(
                python_argv(argv),
                cwd=cwd,
                env=target_environment(Path(cwd), Path(home)),
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                errors="replace",
                start_new_session=True,
            )
            try:
                output, _ = process.communicate(timeout=timeout)
                timed_out = False
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                output, _ = process.communicate()
                timed_out = True
        return CommandResult(
            returncode=process.returncode if not timed_out else 124,
            output=(output or "")[-OUTPUT_LIMIT:],
            seconds=time.monotonic() - started,
            timed_out=timed_out,
        )


def make_runner(fence: str) -> CommandRunner:
    """`unfenced`, or a fence name the sandbox layer knows (`landlock`, `docker`)."""
    if fence == "unfenced":
        return UnfencedRunner()
    from gates.registration.fenced_runner import FencedRunner

    return FencedRunner(fence)
