"""The one place that picks a fence by name, checked enforceable here before it is used."""

import sys

from sandbox.docker_fence import DockerFence
from sandbox.errors import FenceError
from sandbox.landlock import LandlockFence
from sandbox.protocol import Fence
from sandbox.unfenced import Unfenced

FENCE_NAMES = ("landlock", "docker", "none")
UNFENCED_WARNING = (
    "WARNING: running UNFENCED (--unfenced): the command can read, write and reach everything "
    "this user can; only the timeout, process-group kill and environment allowlist apply. "
    "API keys are kept out of the controller's /proc environment, but a command running as "
    "root can still read the controller's memory."
)


def get_fence(name: str, *, unfenced: bool = False) -> Fence:
    """The named fence, checked enforceable here now (fail closed), or a FenceError saying why."""
    if name not in FENCE_NAMES:
        raise FenceError(f"unknown fence {name!r}; choose one of {', '.join(FENCE_NAMES)}")
    if name == "none":
        if not unfenced:
            raise FenceError("--fence none runs without any fence; pass --unfenced to accept that")
        print(UNFENCED_WARNING, file=sys.stderr, flush=True)
        return Unfenced()
    fence = LandlockFence() if name == "landlock" else DockerFence()
    probe = fence.probe()
    if not probe.available:
        other = "docker" if name == "landlock" else "landlock"
        raise FenceError(
            f"the {name} fence cannot be enforced here: {'; '.join(probe.reasons)}; "
            f"pass --fence {other}, or --fence none --unfenced to run without a fence"
        )
    return fence
