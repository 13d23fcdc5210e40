"""`controller verify` with the profile's code in a Landlock-fenced child process.

The profile's kernels are code the controller did not write. Run in the verifying process,
they could leave something behind that outlives the verdict: an exit hook or a thread that
writes `verified.json` after the post-run clear, or rewrites the profile's own files once
they were judged. Here the model runs in a child under Landlock, where the tuned profiles
are read-only and the only writable places are the child's own folder and the Triton cache;
the parent never imports the profile, reads the child's report once it has exited, and alone
writes the record. The fence holds every process the child starts, so nothing lingering can
write the record either.
"""

import os
import secrets
import sys
import tempfile
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from controller.errors import ControllerError
from controller.verification.verify import VerifyReport
from gates.fenced_python import REPOSITORY_ROOT, fenced_python

EXIT_BAD_INPUT = 2
TIMEOUT_S = 3600.0


class VerifyRequest(BaseModel):
    """What the fenced child verifies, and the nonce its report must echo."""

    model_config = ConfigDict(frozen=True)

    profile: str
    tuned_root: Path
    size: str
    driver: str | None = None
    driver_folder: Path | None = None
    """Where `controller verify` ran, importable inside for a target's parity driver."""
    batches: list[int]
    inputs: int
    time_it: bool
    device: str
    nonce: str


class ChildReport(BaseModel):
    nonce: str
    report: VerifyReport


def verify_fenced(request: VerifyRequest, timeout_s: float = TIMEOUT_S) -> VerifyReport:
    """Run the verification in the fenced child and return its report, or a failed one when
    the run gave none to trust; bad input and a fence that cannot start are ControllerErrors,
    one line each."""
    from sandbox import FenceError, FencePolicy, ResourceLimits, get_fence

    try:
        fence = get_fence("landlock")
    except FenceError as error:
        raise ControllerError(
            f"verify: the Landlock fence cannot start ({error}); pass --unfenced to verify in "
            "this process"
        ) from None
    with tempfile.TemporaryDirectory(prefix="verify-") as folder:
        work = Path(folder)
        request_path, report_path = work / "request.json", work / "report.json"
        request_path.write_text(request.model_dump_json())
        python = fenced_python(request.device)
        readable = {*python.readable, request.tuned_root.resolve()}
        environment = dict(python.environment)
        if request.driver_folder is not None:  # a target's driver imports from where it ran
            readable.add(request.driver_folder)
            environment["PYTHONPATH"] += os.pathsep + str(request.driver_folder)
        policy = FencePolicy(
            workspace=work,
            readable=tuple(sorted(readable)),
            writable=(python.triton_cache,),
            env_values=environment,
            gpu=request.device == "cuda",
            limits=ResourceLimits(cpu_seconds=None, memory_mb=None),
            timeout_s=timeout_s,
        )
        command = [sys.executable, "-m", __name__, str(request_path), str(report_path)]
        try:
            result = fence.run(command, policy, cwd=REPOSITORY_ROOT)
        except FenceError as error:
            raise ControllerError(f"verify: the Landlock fence failed to start ({error})") from None
        last = _last_line(result.stderr + result.stdout)
        if result.timed_out:
            return _failed(request, f"ran past {timeout_s:g} s")
        if result.returncode == EXIT_BAD_INPUT:
            raise ControllerError(last or "verify: the fenced child refused its input")
        if result.returncode != 0 or not report_path.is_file():
            return _failed(request, f"exited with code {result.returncode}: {last}")
        try:
            child = ChildReport.model_validate_json(report_path.read_text())
        except ValueError:
            return _failed(request, "left a malformed report")
    if child.nonce != request.nonce:
        return _failed(request, "left a report that does not echo its request")
    return child.report


def _failed(request: VerifyRequest, how: str) -> VerifyReport:
    """A failed verdict for a model run under the profile that gave no trustworthy report:
    it crashed (a write the fence refused, for one), hung, or left a report not its own."""
    import datetime

    from operators.environment import current_environment_identity

    return VerifyReport(
        profile=request.profile,
        model=f"driver {request.driver}" if request.driver else f"example model {request.size}",
        batches=request.batches,
        inputs=request.inputs,
        device=request.device,
        environment=current_environment_identity().model_dump(),
        date=datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        passed=False,
        notes=[f"the fenced model run under the profile {how}"],
    )


def new_nonce() -> str:
    return secrets.token_hex(16)


def _last_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""


def _child(request_path: Path, report_path: Path) -> int:
    """Inside the fence: the profile's selection, the model's forwards, the verdict."""
    import torch

    from controller.verification.verify import DriverForwards, ExampleForwards, verify_profile
    from examples.config import SIZES
    from operators import KernelSelection
    from operators.errors import OperatorError

    request = VerifyRequest.model_validate_json(request_path.read_text())
    device = torch.device(request.device)
    try:
        selection = KernelSelection(
            request.profile, tuned_root=request.tuned_root, allow_unverified=True
        )
        selection.prepare()  # a missing, tampered or foreign profile is refused here
        forwards = (
            DriverForwards(request.driver, device)
            if request.driver
            else ExampleForwards(SIZES[request.size], device)
        )
    except (OperatorError, ControllerError) as error:
        print(str(error).splitlines()[0], file=sys.stderr)
        return EXIT_BAD_INPUT
    report = verify_profile(
        request.profile,
        selection,
        forwards,
        request.batches,
        request.inputs,
        time_it=request.time_it,
    )
    report_path.write_text(ChildReport(nonce=request.nonce, report=report).model_dump_json())
    return 0


if __name__ == "__main__":
    sys.exit(_child(Path(sys.argv[1]), Path(sys.argv[2])))
