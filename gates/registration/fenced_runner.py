"""Run target code for a gate inside a sandbox fence (Landlock or Docker), failing closed.

The candidate may read the system, Python and its own tree, and write only the gate's output
folder and a private scratch folder; its tree is read-only, so a gate's run cannot rewrite what
it judges; no network.
"""

import shutil
import tempfile
from pathlib import Path

from gates.registration.commands import (
    CommandResult,
    bytecode_cache,
    python_argv,
    target_environment,
)
from sandbox.fence import get_fence
from sandbox.policy import FencePolicy, ResourceLimits
from sandbox.protocol import Fence

GATE_CODE = Path(__file__).resolve().parent
LIMITS = ResourceLimits(cpu_seconds=1800, memory_mb=None, processes=1024, file_size_mb=1024)


class FencedRunner:
    """A `CommandRunner` over `sandbox.get_fence(name)`; refuses when the fence is unavailable."""

    def __init__(self, fence: "str | Fence", pycache_prefix: Path | None = None) -> None:
        self.fence = get_fence(fence) if isinstance(fence, str) else fence
        self.pycache_prefix = pycache_prefix
        name = self.fence.name
        self.description = "unfenced" if name == "none" else f"{name} fence"

    def run(
        self,
        argv: list[str],
        cwd: Path,
        *,
        writable: tuple[Path, ...] = (),
        timeout: float = 600,
        seed_bytecode: bool = False,
    ) -> CommandResult:
        scratch = Path(tempfile.mkdtemp(prefix="gate-scratch-"))
        try:
            cache = bytecode_cache(self.pycache_prefix, scratch)
            environment = target_environment(Path(cwd), scratch, cache, seed_bytecode)
            for name in ("HOME", "TMPDIR"):
                environment.pop(name)
            shared_cache = () if cache.is_relative_to(scratch) else (cache,)
            policy = FencePolicy(
                workspace=scratch,
                readable=(GATE_CODE, Path(cwd), *([] if seed_bytecode else shared_cache)),
                writable=(*writable, *(shared_cache if seed_bytecode else ())),
                env_values=environment,
                limits=LIMITS,
                timeout_s=timeout,
            )
            argv = python_argv(argv, cache, seed_bytecode)
            result = self.fence.run(argv, policy, cwd=Path(cwd))
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        output = (result.stdout + result.stderr)[-20_000:]
        return CommandResult(
            returncode=result.returncode,
            output=output,
            seconds=result.seconds,
            timed_out=result.timed_out,
        )
