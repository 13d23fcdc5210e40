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
    """Runs argv in `cwd` (read-only where fenced), allowed to write only `writable`, killed at
    `timeout`. `seed_bytecode` lets the run write the runner's private bytecode cache: only for
    BASE's own runs, which fill it once per run so later runs need not compile everything."""

    description: str

    def run(
        self,
        argv: list[str],
        cwd: Path,
        *,
        writable: tuple[Path, ...] = (),
        timeout: float = 600,
        seed_bytecode: bool = False,
    ) -> CommandResult: ...


def python_argv(
    argv: list[str] | tuple[str, ...], pycache_prefix: Path, write_bytecode: bool = False
) -> list[str]:
    """A target command with `python` meaning the controller's own interpreter, which reads and
    writes bytecode only under `pycache_prefix` (also under `-I`, which ignores the environment)
    and writes none unless `write_bytecode`."""
    argv = list(argv)
    if argv and argv[0] in ("python", "python3"):
        argv[0] = sys.executable
    if not argv or argv[0] != sys.executable:
        return argv
    options = ["-X", f"pycache_prefix={pycache_prefix}"] + ([] if write_bytecode else ["-B"])
    rest = argv[1:]
    if write_bytecode:
        leading = 0
        while leading < len(rest) and rest[leading].startswith("-") and rest[leading] != "-c":
            if rest[leading] in ("-m", "-X", "-W"):
                break
            leading += 1
        rest = [arg for arg in rest[:leading] if arg != "-B"] + rest[leading:]
    return [argv[0], *options, *rest]


def target_environment(
    tree: Path, home: Path, pycache_prefix: Path, write_bytecode: bool = False
) -> dict[str, str]:
    """The environment target code runs with: its own tree first on the path, profile none,
    no bytecode written and a private cache prefix (so no `__pycache__` in the tree is read)."""
    environment = {
        "PATH": os.path.dirname(sys.executable) + os.pathsep + "/usr/bin:/bin",
        "HOME": str(home),
        "TMPDIR": str(home),
        "PYTHONPATH": str(tree),
        "PYTHONPYCACHEPREFIX": str(pycache_prefix),
        "PYTHONHASHSEED": "0",
        "CONTROLLER_KERNEL_PROFILE": "none",
        "LANG": "C.UTF-8",
    }
    if not write_bytecode:
        environment["PYTHONDONTWRITEBYTECODE"] = "1"
    for name in ("TRITON_INTERPRET", "OMP_NUM_THREADS", "CUDA_VISIBLE_DEVICES"):
        if name in os.environ:
            environment[name] = os.environ[name]
    return environment


def bytecode_cache(pycache_prefix: Path | None, scratch: Path) -> Path:
    """The runner's own cache folder, or an empty one in the run's scratch folder."""
    if pycache_prefix is None:
        return scratch / "pycache"
    Path(pycache_prefix).mkdir(parents=True, exist_ok=True)
    return Path(pycache_prefix)


class UnfencedRunner:
    """Runs commands as plain subprocesses in their own process group (for --unfenced)."""

    description = "unfenced"

    def __init__(self, pycache_prefix: Path | None = None) -> None:
        self.pycache_prefix = pycache_prefix

    def run(
        self,
        argv: list[str],
        cwd: Path,
        *,
        writable: tuple[Path, ...] = (),
        timeout: float = 600,
        seed_bytecode: bool = False,
    ) -> CommandResult:
        started = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="gate-home-") as home:
            cache = bytecode_cache(self.pycache_prefix, Path(home))
            process = subprocess.Popen(
                python_argv(argv, cache, seed_bytecode),
                cwd=cwd,
                env=target_environment(Path(cwd), Path(home), cache, seed_bytecode),
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
