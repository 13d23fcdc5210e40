"""A stand-in fence with the sandbox interface, used only until `sandbox/` fences exist."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from pydantic import BaseModel, ConfigDict


class FencePolicy(BaseModel):
    model_config = ConfigDict(frozen=True)
    workspace: Path
    readable: tuple[Path, ...] = ()
    writable: tuple[Path, ...] = ()
    allow_tcp: tuple[int, ...] = ()
    env: tuple[str, ...] = ()
    env_values: dict[str, str] = {}
    timeout_s: float = 60
    gpu: bool = False


class FenceResult(BaseModel):
    returncode: int
    stdout: str
    stderr: str
    timed_out: bool
    seconds: float


class PassThroughFence:
    name = "double"

    def run(self, argv, policy, stdin=None, cwd=None) -> FenceResult:
        env = {name: os.environ[name] for name in policy.env if name in os.environ}
        env.update(policy.env_values)
        env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
        started = time.monotonic()
        try:
            done = subprocess.run(
                argv, input=stdin, capture_output=True, text=True, cwd=cwd or policy.workspace,
                env=env, timeout=policy.timeout_s,
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            return FenceResult(returncode=-9, stdout="", stderr="", timed_out=True,
                               seconds=time.monotonic() - started)  # fmt: skip
        return FenceResult(returncode=done.returncode, stdout=done.stdout, stderr=done.stderr,
                           timed_out=False, seconds=time.monotonic() - started)  # fmt: skip
