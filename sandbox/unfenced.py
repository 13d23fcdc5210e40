"""Unfenced: no isolation at all, only timeout, process-group kill and the environment allowlist."""

import shutil
import tempfile
from pathlib import Path

from sandbox.environment import fenced_environment
from sandbox.policy import FencePolicy
from sandbox.process import run_captured
from sandbox.protocol import FenceProbe, FenceResult, check_command, result_from


class Unfenced:
    """Runs the command as this user with full access; chosen only with --unfenced."""

    name = "none"

    def probe(self) -> FenceProbe:
        return FenceProbe(
            fence=self.name,
            available=True,
            details={
                "filesystem": "NOT enforced",
                "network": "NOT enforced",
                "environment": "allowlist",
                "timeout": "kills the process group (not descendants that called setsid)",
            },
            reasons=[],
        )

    def run(
        self,
        argv: list[str],
        policy: FencePolicy,
        stdin: str | None = None,
        cwd: Path | None = None,
    ) -> FenceResult:
        folder = check_command(argv, cwd, policy)
        private_tmp = Path(tempfile.mkdtemp(prefix="kc-unfenced-tmp-"))
        try:
            captured = run_captured(
                list(argv),
                env=fenced_environment(policy, private_tmp),
                stdin=stdin,
                cwd=folder,
                timeout_s=policy.timeout_s,
            )
        except FileNotFoundError as error:
            return FenceResult(
                returncode=127, stdout="", stderr=f"{error}\n", timed_out=False, seconds=0.0
            )
        finally:
            shutil.rmtree(private_tmp, ignore_errors=True)
        return result_from(captured)
