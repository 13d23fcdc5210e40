"""The Fence protocol every sandbox implements and what a fenced run returns.

Its own module so that each fence and the factory that picks one (`sandbox.fence`) import it
without importing each other.
"""

from pathlib import Path
from typing import Protocol, runtime_checkable

from pydantic import BaseModel

from sandbox.errors import FenceError
from sandbox.policy import FencePolicy


class FenceResult(BaseModel):
    """What a fenced command did; returncode is 124 on timeout, 128+N when killed by signal N."""

    returncode: int
    stdout: str
    stderr: str
    timed_out: bool
    seconds: float


class FenceProbe(BaseModel):
    """What a fence can enforce on this machine, and if not, why not."""

    fence: str
    available: bool
    details: dict[str, str]
    reasons: list[str]


@runtime_checkable
class Fence(Protocol):
    """Runs one command under a policy, refusing (FenceError) what it cannot enforce."""

    name: str

    def probe(self) -> FenceProbe: ...

    def run(
        self,
        argv: list[str],
        policy: FencePolicy,
        stdin: str | None = None,
        cwd: Path | None = None,
    ) -> FenceResult: ...


def check_command(argv: list[str], cwd: Path | None, policy: FencePolicy) -> Path:
    """The working folder for argv: must be the workspace or inside something the fence grants."""
    if not argv or not all(isinstance(part, str) and part for part in argv[:1]):
        raise FenceError("no command given; put the command after `--`")
    folder = (cwd or policy.workspace).resolve()
    if not folder.is_dir():
        raise FenceError(f"working folder {folder} does not exist")
    return folder


def result_from(captured) -> FenceResult:
    """A FenceResult from the process runner's CapturedRun."""
    return FenceResult(
        returncode=captured.returncode,
        stdout=captured.stdout,
        stderr=captured.stderr,
        timed_out=captured.timed_out,
        seconds=captured.seconds,
    )
