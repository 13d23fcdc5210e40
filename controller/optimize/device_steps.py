"""The real side effects of an optimize batch: `controller profile`, `capture-ops` and
`calibrate` in this process, one tune-all batch per operator, and `verify`'s numerics and
paired timing on the example model. The model checks run the staged kernels, code an agent
wrote, so they run in `verify`'s Landlock-fenced child (in this process only when the batch
runs unfenced): nothing those kernels leave behind can reach the verdict or the profile
published after it."""

from pathlib import Path

from controller.batch.record import RunOptions
from controller.optimize.starting_points import seeded_spec
from controller.optimize.steps import OptimizeInterrupted, TuneOutcome
from controller.verification.verify import (
    MODEL_SEED,
    ExampleForwards,
    VerifyReport,
    reference_cases,
    time_beside_baselines,
    verify_profile,
)
from examples.paired_timing import PairedTiming
from operators import KernelSelection

PROFILE_WARMUP, PROFILE_STEPS, PROFILE_TIMED_STEPS = 1, 3, 10
CAPTURE_STEPS = 1


def deployed_mode(cuda: bool) -> str:
    """How the plan reads the model: as it deploys on a GPU, one replayed CUDA graph (an eager
    step there is bound by the host's launches, so every operator's share would read small);
    eagerly on a CPU, where nothing is captured."""
    return "graph" if cuda else "eager"


class DeviceSteps:
    """Profiles and captures the driver, tunes through tune-all, checks the example model."""

    def __init__(
        self,
        options: RunOptions,
        preflight: bool,
        gpus: list[str],
        size: str,
        batches: list[int],
        inputs: int,
        say=print,
        seed: Path | None = None,
        templates: bool = False,
    ) -> None:
        self.options, self.preflight, self.gpus = options, preflight, gpus
        self.seed, self.templates = seed, templates
        self.size, self.batches, self.inputs, self.say = size, batches, inputs, say
        self._forwards: ExampleForwards | None = None
        self._cases = None

    def profile(self, driver: list[str], folder: Path) -> None:
        from controller.profiling.driver import load_driver
        from controller.profiling.hotspot_files import write_report
        from controller.profiling.hotspots import build_report
        from controller.profiling.profiled_run import profile_driver
        from operators import triton_runtime

        step = load_driver(driver)
        mode = deployed_mode(triton_runtime.cuda_available())
        run = profile_driver(step, mode, PROFILE_WARMUP, PROFILE_STEPS, PROFILE_TIMED_STEPS)
        write_report(build_report(run, driver), folder)

    def capture(self, driver: list[str], folder: Path) -> None:
        from controller.profiling.driver import load_driver
        from operators.call_capture import CallCapture

        step = load_driver(driver)
        capture = CallCapture()
        with capture.recording():
            for _ in range(CAPTURE_STEPS):
                step()
        capture.write(folder, driver[0], driver[1:], CAPTURE_STEPS)

    def calibrate(self, capture: Path, operators: list[str]) -> None:
        import torch

        from gates.calibration.capture_calibration import calibrate_capture
        from gates.calibration.contract_file import DEFAULT_MARGIN
        from operators import triton_runtime

        device = "cuda" if triton_runtime.cuda_available() else "cpu"
        calibrate_capture(capture, operators, DEFAULT_MARGIN, torch.device(device))

    def tune(self, operator: str, minutes: float, capture: Path, folder: Path) -> TuneOutcome:
        """One tune-all batch of one operator in `folder`: started, or resumed if there."""
        from controller.batch.summary import summarize_operator
        from controller.batch.tune_all import run_batch, start_batch
        from controller.batch.workers import LocalWorkers
        from controller.errors import ControllerError
        from gates.errors import GateError
        from operators.errors import OperatorError

        found = sorted(folder.glob("batch-*")) if folder.is_dir() else []
        if found:
            batch = found[-1]
        else:
            options = self.options.model_copy(
                update={"max_minutes": minutes, "agent": self.agent_for(operator)}
            )
            try:
                batch = start_batch(folder, [operator], options, self.preflight, capture=capture)
            except (ControllerError, GateError, OperatorError) as error:  # this operator only
                return TuneOutcome(operator=operator, status="failed", reason=str(error))
        record, _ = run_batch(batch, LocalWorkers(batch, self.gpus), say=self.say)
        if record.state == "interrupted":
            raise OptimizeInterrupted(f"tuning {operator} was stopped")
        entry = record.entries[operator]
        row = summarize_operator(batch, operator, entry)
        return TuneOutcome(
            operator=operator,
            status=entry.status,
            export=row.export if entry.status == "done" else None,
            speedup=row.speedup,
            reason=row.stop_reason,
        )

    def agent_for(self, operator: str) -> str:
        """The batch's agent, seeded with the seed profile's kernel where it ships one, else
        with the operator's kernel template where templates are on."""
        return seeded_spec(self.seed, operator, self.options.agent, self.templates)

    def numerics(self, label: str, selection: KernelSelection) -> VerifyReport:
        forwards = self._example()
        if self._cases is None:  # the FP32 reference and the baseline, once per batch
            self._cases = reference_cases(forwards, self.batches, self.inputs)
        if not self.options.unfenced:
            from controller.verification.fenced_verify import verify_fenced

            request = self._request(selection, time_it=False)
            report = verify_fenced(request, cases=self._cases)
            return report.model_copy(update={"profile": label})
        return verify_profile(
            label, selection, forwards, self.batches, self.inputs, self._cases, time_it=False
        )

    def time(
        self,
        profiles: dict[str, KernelSelection],
        pairs: list[tuple[str, str]],
        log: Path | None = None,
    ) -> list[PairedTiming]:
        if not self.options.unfenced:
            return self._time_fenced(profiles, pairs, log)
        forwards = self._example()
        if forwards.device.type != "cuda":
            return []
        notes: list[str] = []
        timing = [
            time_beside_baselines(
                forwards.model, forwards.inputs(batch, MODEL_SEED), profiles, pairs, notes
            )
            for batch in self.batches
        ]
        for note in notes:
            self.say(f"optimize: model timing: {note}")
        return timing

    def _time_fenced(
        self,
        profiles: dict[str, KernelSelection],
        pairs: list[tuple[str, str]],
        log: Path | None,
    ) -> list[PairedTiming]:
        from controller.verification.fenced_verify import TimedProfile, time_fenced
        from operators import triton_runtime
        from operators.selection import BUILTIN_PROFILES

        if not triton_runtime.cuda_available():
            return []
        timed = {
            label: TimedProfile(
                profile=selection.profile,
                tuned_root=None if selection.profile in BUILTIN_PROFILES else selection.tuned_root,
            )
            for label, selection in profiles.items()
        }
        first = next(iter(profiles.values()))
        request = self._request(first, time_it=True).model_copy(
            update={"timed": timed, "pairs": pairs, "inputs": 0}
        )
        timing, told = time_fenced(request, log=log)
        if told:
            self.say(f"optimize: model timing: {told}")
        if not timing:  # on a GPU: no kernel is dropped for a timing that never happened
            raise OptimizeInterrupted(
                f"the model could not be timed on this GPU ({told or 'no figures'}); the batch "
                "stays resumable with --resume once the cause is fixed"
            )
        return timing

    def _request(self, selection: KernelSelection, time_it: bool):
        """What `verify`'s fenced child runs: the example model under `selection`."""
        from controller.verification.fenced_verify import VerifyRequest, new_nonce
        from operators import triton_runtime

        return VerifyRequest(
            profile=selection.profile,
            tuned_root=selection.tuned_root.resolve(),
            size=self.size,
            batches=self.batches,
            inputs=self.inputs,
            time_it=time_it,
            device=str(triton_runtime.default_device()),
            nonce=new_nonce(),
        )

    def _example(self) -> ExampleForwards:
        if self._forwards is None:
            from examples.config import SIZES
            from operators import triton_runtime

            self._forwards = ExampleForwards(SIZES[self.size], triton_runtime.default_device())
        return self._forwards
