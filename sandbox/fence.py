"""The fence protocol every sandbox implements, and the one place that picks a fence by name."""

import sys
from pathlib import Path
from typing import Protocol, runtime_checkable

from pydantic import BaseModel

from sandbox.errors import FenceError
from sandbox.policy import FencePolicy

FENCE_NAMES = ("landlock", "docker", "none")
UNFENCED_WARNING = (
    "WARNING: running UNFENCED (--unfenced): the command can read, write and reach everything "
    "this user can; only the timeout, process-group kill and environment allowlist apply."
)


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


def get_fence(name: str, *, unfenced: bool = False) -> Fence:
    """The named fence, checked enforceable here now (fail closed), or a FenceError saying why."""
    if name not in FENCE_NAMES:
        raise FenceError(f"unknown fence {name!r}; choose one of {', '.join(FENCE_NAMES)}")
    if name == "none":
        if not unfenced:
            raise FenceError("--fence none runs without any fence; pass --unfenced to accept that")
        from sandbox.unfenced import Unfenced

        print(UNFENCED_WARNING, file=sys.stderr, flush=True)
        return Unfenced()
    if name == "landlock":
        from sandbox.landlock import LandlockFence

        fence = LandlockFence()
    else:
        from sandbox.docker_fence import DockerFence

        fence = DockerFence()
    probe = fence.probe()
    if not probe.available:
        other = "docker" if name == "landlock" else "landlock"
        raise FenceError(
            f"the {name} fence cannot be enforced here: {'; '.join(probe.reasons)}; "
            f"pass --fence {other}, or --fence none --unfenced to run without a fence"
        )
    return fence


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
