"""The machine's side of `controller optimize`, faked at its boundary (`OptimizeSteps`): a
profile with chosen shares, the session's real tiny capture, tune runs whose promoted kernel is
the production kernel exported by the tune flow's own exporter, and a model whose numerics and
time follow from which kernels a selection holds."""

import shutil
import sys
from pathlib import Path

from controller.optimize.steps import HOTSPOTS_FILE, TuneOutcome
from controller.profiling.hotspots import HotspotReport, RegionTime, StepAccount
from controller.profiling.profiled_run import WallTime
from controller.verification.verify import VerifyReport
from examples.paired_timing import PairedTiming, SpeedRatio
from operators import REGISTRY

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "install"))
from export_fixtures import make_export  # noqa: E402

BASE_MS = 100.0
ROUNDS = 6


def hotspot_report(us_per_step: dict[str, float]) -> HotspotReport:
    """A CPU profile whose registry operators take `us_per_step` of a 1000 us step."""
    step = 1000.0
    rows = [
        RegionTime(
            region=f"registry:{name}",
            kind="registry",
            calls_per_step=2.0,
            kernels_per_step=2.0,
            kernel_us_per_step=us,
            share_of_step=us / step,
            mean_kernel_us=us / 2,
            share_under_5us=0.0,
        )
        for name, us in us_per_step.items()
    ]
    wall = WallTime(
        clock="host clock", unprofiled_median_us=step, unprofiled_samples=1, profiled_median_us=step
    )
    return HotspotReport(
        driver=["fake"],
        mode="eager",
        device_attribution=False,
        note="fake",
        warmup=0,
        steps=1,
        registry=rows,
        elsewhere=[],
        registry_us_per_step=sum(us_per_step.values()),
        outside_registry_us_per_step=0.0,
        gaps=[],
        account=StepAccount(
            busy_us_per_step=step,
            gap_us_per_step=0.0,
            account_us_per_step=step,
            wall=wall,
            agreement=0.0,
            profiled_agreement=0.0,
            within_goal=True,
        ),
    )


class FakeSteps:
    """`promoted`: operator -> the ms its kernel takes off the model (negative: it slows the
    model); `bad_numerics`: kernels the model's numerical gate fails with."""

    def __init__(self, capture: Path, us_per_step, promoted, bad_numerics=()) -> None:
        self.capture_source, self.us_per_step = capture, us_per_step
        self.promoted, self.bad_numerics = promoted, set(bad_numerics)
        self.tuned: list[tuple[str, float]] = []
        self.calibrated: list[str] = []

    def profile(self, driver, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        report = hotspot_report(self.us_per_step)
        (folder / HOTSPOTS_FILE).write_text(report.model_dump_json())

    def capture(self, driver, folder: Path) -> None:
        shutil.rmtree(folder, ignore_errors=True)
        shutil.copytree(self.capture_source, folder)

    def calibrate(self, capture, operators) -> None:
        self.calibrated = list(operators)

    def tune(self, operator, minutes, capture, folder: Path) -> TuneOutcome:
        self.tuned.append((operator, minutes))
        if operator not in self.promoted:
            return TuneOutcome(operator=operator, status="rejected", reason="nothing promoted")
        shutil.rmtree(folder, ignore_errors=True)
        export = make_export(folder, operator)
        return TuneOutcome(operator=operator, status="done", export=str(export), speedup=1.2)

    def numerics(self, label, selection) -> VerifyReport:
        bad = self.bad_numerics & tuned_operators(selection)
        return VerifyReport(
            profile=label,
            model="fake model",
            batches=[1],
            inputs=1,
            device="cpu",
            environment={},
            date="",
            passed=not bad,
        )

    def time(self, profiles, pairs, log=None) -> list[PairedTiming]:
        round_ms = {}
        for name, selection in profiles.items():
            ms = BASE_MS - sum(self.promoted[op] for op in tuned_operators(selection))
            round_ms[name] = [ms * (1 + 0.001 * (index % 2)) for index in range(ROUNDS)]
        ratios = [_ratio(candidate, baseline, round_ms) for candidate, baseline in pairs]
        return [
            PairedTiming(
                batch=1,
                mode="graph",
                clock="fake",
                rounds=ROUNDS,
                calls_per_round=1,
                median_ms={name: ms[0] for name, ms in round_ms.items()},
                round_ms=round_ms,
                ratios=ratios,
            )
        ]


def tuned_operators(selection) -> set[str]:
    return {name for name in REGISTRY.names() if selection.resolve(name).tuned is not None}


def _ratio(candidate: str, baseline: str, round_ms) -> SpeedRatio:
    rounds = [b / c for b, c in zip(round_ms[baseline], round_ms[candidate], strict=True)]
    return SpeedRatio(
        candidate=candidate,
        baseline=baseline,
        median=sorted(rounds)[len(rounds) // 2],
        lowest=min(rounds),
        highest=max(rounds),
        faster_beyond_noise=min(rounds) > 1,
        slower_beyond_noise=max(rounds) < 1,
    )
