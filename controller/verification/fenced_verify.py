"""`controller verify` with the profile's code in a Landlock-fenced child process.

The profile's kernels are code the controller did not write. Run in the verifying process,
they could leave something behind that outlives the verdict: an exit hook or a thread that
writes `verified.json` after the post-run clear, or rewrites the profile's own files once
they were judged. Here the model runs under the profile in a child under Landlock, where the
tuned profiles are read-only and the only writable places are the child's own folder and the
Triton cache. The child hands back its outputs per case (first, and again after the timing)
and its timing; once it has exited, the parent, which never imports the profile, computes the
FP32 reference and the baseline itself, judges those outputs, and alone writes the record.
The fence holds every process the child starts, so nothing lingering can write the record.
The timing the parent does take from the child; the child's watch (`child_watch`) names any
change the profile's code made to what that timing and the record rely on, and any thread it
left, and the parent fails such a profile; the child leaves with `os._exit`, so no exit hook
rewrites its record.
"""

import os
import pickle
import re
import secrets
import sys
import tempfile
from pathlib import Path

import torch
from pydantic import BaseModel, ConfigDict

from controller.errors import ControllerError
from controller.runs.store import write_atomic
from controller.verification.verify import VerifyReport
from examples.paired_timing import PairedTiming
from gates.evaluator.launcher import REPOSITORY_ROOT
from gates.fenced_python import fenced_python

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
    timed: dict[str, "TimedProfile"] = {}
    """When given, what the child times instead of the profile against `none` and `stock`: each
    label's profile, paired per `pairs` (optimize's staged sets of kernels)."""
    pairs: list[tuple[str, str]] = []


class TimedProfile(BaseModel):
    """One profile the child times: a built-in one (no root) or one installed under a root."""

    model_config = ConfigDict(frozen=True)

    profile: str
    tuned_root: Path | None = None


class ChildRecord(BaseModel):
    """What the child ran besides its outputs (those are a tensor file beside it)."""

    nonce: str
    timing: list[PairedTiming]
    notes: list[str]
    tampered: list[str] = []
    """What the child's watch found the profile's code changed (`child_watch`)."""


FIRST, LATE = "first", "late"
VerifyRequest.model_rebuild()


def verify_fenced(
    request: VerifyRequest, timeout_s: float = TIMEOUT_S, cases: list | None = None
) -> VerifyReport:
    """Run the verification in the fenced child and return its report, or a failed one when
    the run gave none to trust; bad input and a fence that cannot start are ControllerErrors,
    one line each. `cases`: the FP32 reference and baseline of the request's cases, where the
    caller computed them already (optimize checks several profiles on the same cases)."""
    handed_back = _run_child(request, timeout_s)
    if isinstance(handed_back, str):
        return _failed(request, handed_back)
    record, outputs = handed_back
    if record.tampered:
        return _failed(request, f"changed what the verdict relies on: {record.tampered[0]}")
    return _judged_here(request, record, outputs, cases)


def time_fenced(
    request: VerifyRequest, timeout_s: float = TIMEOUT_S, log: Path | None = None
) -> tuple[list[PairedTiming], str]:
    """The paired timing of `request.timed` from the fenced child, and what to tell of it:
    why it is empty where the child gave none to trust (a crash, a hang, a record not its
    own), else the child's notes (a baseline timed another way than intended). `log`: where
    the child's whole output is kept (its traceback, where it crashed)."""
    handed_back = _run_child(request, timeout_s, log)
    if isinstance(handed_back, str):
        where = f" (its output: {log})" if log is not None else ""
        return [], f"the fenced model run under the profile {handed_back}{where}"
    record, _ = handed_back
    if record.tampered:
        return [], f"the profile's code changed what the timing relies on: {record.tampered[0]}"
    return record.timing, "; ".join(record.notes)


def _run_child(request: VerifyRequest, timeout_s: float, log: Path | None = None):
    """The child's record and outputs, or how the run failed to leave ones to trust; the
    child's whole stdout and stderr go to `log` where one is named."""
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
        request_path, record_path = work / "request.json", work / "record.json"
        outputs_path = work / "outputs.pt"
        request_path.write_text(request.model_dump_json())
        python = fenced_python(request.device)
        roots = [request.tuned_root] + [t.tuned_root for t in request.timed.values()]
        readable = {*python.readable, *(root.resolve() for root in roots if root is not None)}
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
            limits=ResourceLimits(cpu_seconds=None, memory_mb=None, file_size_mb=None),
            timeout_s=timeout_s,
        )
        command = [sys.executable, "-m", __name__]
        command += [str(request_path), str(record_path), str(outputs_path)]
        try:
            result = fence.run(command, policy, cwd=REPOSITORY_ROOT)
        except FenceError as error:
            raise ControllerError(f"verify: the Landlock fence failed to start ({error})") from None
        if log is not None:
            write_atomic(log, f"{result.stderr}\n--- stdout ---\n{result.stdout}")
        last = _last_line(result.stderr + result.stdout)
        if result.timed_out:
            return f"ran past {timeout_s:g} s"
        if result.returncode == EXIT_BAD_INPUT:
            raise ControllerError(last or "verify: the fenced child refused its input")
        if result.returncode != 0 or not record_path.is_file() or not outputs_path.is_file():
            return f"exited with code {result.returncode}: {last}"
        try:
            record = ChildRecord.model_validate_json(record_path.read_text())
            outputs = torch.load(outputs_path, weights_only=True, map_location="cpu")
        except (ValueError, RuntimeError, pickle.UnpicklingError):
            return "left a malformed record"
    if record.nonce != request.nonce:
        return "left a record that does not echo its request"
    return record, outputs


def _judged_here(
    request: VerifyRequest, record: ChildRecord, outputs, cases: list | None
) -> VerifyReport:
    """The child's outputs judged in this process against the FP32 reference and the baseline
    it computes itself (under `torch`: no profile code runs here), or those given."""
    from controller.verification.model_gate import VerificationError, judge
    from controller.verification.verify import judged_report, reference_cases

    report = _header(request)
    if cases is None:
        try:
            cases = reference_cases(_forwards(request), request.batches, request.inputs)
        except VerificationError as error:
            return report.model_copy(update={"error": str(error)})
    device = torch.device(request.device)
    try:
        first = judge(cases, _recorded(outputs, FIRST, device))
        late = judge(cases, _recorded(outputs, LATE, device))
    except (KeyError, TypeError, AttributeError):
        return _failed(request, "left outputs that are not the cases'")
    return judged_report(report, first, record.timing, late, record.notes)


def _recorded(outputs, role: str, device):
    """A (batch, seed) -> outputs function over what the child recorded for `role`."""

    def forward(batch: int, seed: int) -> dict:
        return {
            name: tensor.to(device) for name, tensor in outputs[role][_case(batch, seed)].items()
        }

    return forward


def _case(batch: int, seed: int) -> str:
    return f"{batch}/{seed}"


def _forwards(request: VerifyRequest):
    from controller.verification.verify import DriverForwards, ExampleForwards
    from examples.config import SIZES

    device = torch.device(request.device)
    if request.driver:
        folder = str(request.driver_folder) if request.driver_folder else None
        if folder and folder not in sys.path:  # where the command ran, as `python -m` has it
            sys.path.insert(0, folder)
        return DriverForwards(request.driver, device)
    return ExampleForwards(SIZES[request.size], device)


def _failed(request: VerifyRequest, how: str) -> VerifyReport:
    """A failed verdict for a model run under the profile that gave no trustworthy report:
    it crashed (a write the fence refused, for one), hung, or left a report not its own."""
    return _header(request).model_copy(
        update={"notes": [f"the fenced model run under the profile {how}"]}
    )


def _header(request: VerifyRequest) -> VerifyReport:
    from controller.verification.verify import model_label, new_report

    model = model_label(request.size, request.driver)
    return new_report(request.profile, model, request.device, request.batches, request.inputs)


def new_nonce() -> str:
    return secrets.token_hex(16)


EXCEPTION_LINE = re.compile(r"^[\w.]*(Error|Exception|Interrupt)\b.*")
"""A traceback's final line, `torch.AcceleratorError: CUDA error: ...` say."""


def _last_line(text: str) -> str:
    """The line that says why the child failed: its last exception line where there is one (a
    CUDA warning printed by a destructor after the traceback would hide it), else its last."""
    lines = [line for line in text.splitlines() if line.strip()]
    raised = [line for line in lines if EXCEPTION_LINE.match(line)]
    chosen = raised[-1] if raised else (lines[-1] if lines else "")
    return chosen[:300]


def _child(request_path: Path, record_path: Path, outputs_path: Path) -> int:
    """Inside the fence: the model under the profile on every case, then its timing, then
    every case again; outputs and timing handed back, no verdict."""
    from controller.verification.child_watch import ChildWatch
    from controller.verification.verify import profile_timing
    from operators import KernelSelection
    from operators.errors import OperatorError

    request = VerifyRequest.model_validate_json(request_path.read_text())
    watch = ChildWatch()  # before the profile's code loads
    try:
        selection = KernelSelection(
            request.profile, tuned_root=request.tuned_root, allow_unverified=True
        )
        selection.prepare()  # a missing, tampered or foreign profile is refused here
        forwards = _forwards(request)
    except (OperatorError, ControllerError) as error:
        print(str(error).splitlines()[0], file=sys.stderr)
        return EXIT_BAD_INPUT
    forward = forwards.under(selection)
    cases = [(batch, seed) for batch in request.batches for seed in range(request.inputs)]

    def run_all() -> dict:
        found = {}
        for batch, seed in cases:
            found[_case(batch, seed)] = {k: v.cpu() for k, v in forward(batch, seed).items()}
        return found

    first = run_all()
    tampered = watch.findings()
    if request.timed:
        timing, notes = _staged_timing(request, forwards)
    else:
        timing, notes = profile_timing(
            request.profile, selection, forwards, request.batches, request.time_it
        )
    tampered = tampered or watch.findings(threads=False)  # before the profile runs again,
    late = run_all()  # which could undo a change made while the timing captured it
    tampered = tampered or watch.findings(threads=False)
    torch.save({FIRST: first, LATE: late}, outputs_path)
    record = ChildRecord(nonce=request.nonce, timing=timing, notes=notes, tampered=tampered)
    record_path.write_text(record.model_dump_json())
    return 0


def _staged_timing(request: VerifyRequest, forwards) -> tuple[list[PairedTiming], list[str]]:
    """Inside the fence: `request.timed` paired per `request.pairs`, per batch (CUDA only),
    and the notes of the timing."""
    from controller.verification.verify import MODEL_SEED, time_beside_baselines
    from operators import KernelSelection

    if forwards.device.type != "cuda":
        return [], []
    profiles = {
        label: KernelSelection(timed.profile)
        if timed.tuned_root is None
        else KernelSelection(timed.profile, tuned_root=timed.tuned_root, allow_unverified=True)
        for label, timed in request.timed.items()
    }
    notes: list[str] = []
    timing = [
        time_beside_baselines(
            forwards.model, forwards.inputs(batch, MODEL_SEED), profiles, request.pairs, notes
        )
        for batch in request.batches
    ]
    return timing, notes


if __name__ == "__main__":
    exit_code = _child(Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]))
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(exit_code)  # no exit hook of the profile's runs after the record was written
