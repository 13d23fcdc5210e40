"""The side effects of an optimize batch, behind one protocol: profiling and capturing the
driver, calibrating contracts, tuning one operator, and the model-level checks (numerics,
paired model time).

`DeviceSteps` does them for real; tests fake this boundary, never the batch's logic."""

from pathlib import Path
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from controller.verification.verify import VerifyReport
from examples.paired_timing import PairedTiming
from operators import KernelSelection

HOTSPOTS_FILE = "hotspots.json"


class OptimizeInterrupted(Exception):
    """The batch was stopped (Ctrl-C, SIGTERM) inside a step; `--resume` carries on."""


class TuneOutcome(BaseModel):
    """How one operator's tuning ended, and the export to install when it promoted a kernel."""

    model_config = ConfigDict(frozen=True)

    operator: str
    status: Literal["done", "rejected", "failed", "preflight_failed"]
    export: str | None = Field(None, description="the promoted kernel's export folder")
    speedup: float | None = Field(None, description="weighted, over the production kernel")
    reason: str = ""


class OptimizeSteps(Protocol):
    """What an optimize batch asks of the machine; each call may be repeated after a crash,
    so each writes its files whole or not at all."""

    def profile(self, driver: list[str], folder: Path) -> None:
        """Profile the driver; leaves `folder/hotspots.json` (a HotspotReport)."""

    def capture(self, driver: list[str], folder: Path) -> None:
        """Capture the driver's registry calls; leaves a `capture-ops` folder."""

    def calibrate(self, capture: Path, operators: list[str]) -> None:
        """Measure `operators`' contracts against their FP64 reference on the capture's inputs
        (`calibration.json` beside the capture, which the tune tasks then carry)."""

    def tune(self, operator: str, minutes: float, capture: Path, folder: Path) -> TuneOutcome:
        """Tune `operator` on its captured workloads for at most `minutes` (resuming a
        tuning left in `folder`); raises OptimizeInterrupted when stopped."""

    def numerics(self, label: str, selection: KernelSelection) -> VerifyReport:
        """The model-level numerical gate of `verify` under `selection` (not timed)."""

    def time(
        self,
        profiles: dict[str, KernelSelection],
        pairs: list[tuple[str, str]],
        log: Path | None = None,
    ) -> list[PairedTiming]:
        """The model's time under every profile, paired and interleaved, one entry per batch
        size; empty where the model cannot be timed (no CUDA). `log`: where the timing's own
        output goes (a fenced child's whole stderr, to read why it failed)."""
