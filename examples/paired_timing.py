"""The model's time under several kernel profiles, paired and interleaved, so a speedup is a
ratio measured in one run and drift of the device moves every profile alike.

Each profile's forward is deployed once (one CUDA graph on a GPU, eager on a CPU) under its own
kernel selection. Then, round after round, every forward runs a few timed calls in an order
that rotates each round; a round's figure per profile is its median call. A speedup is the
ratio of two profiles' figures in the same round; it is "beyond noise" only when every
round's ratio is on the same side of 1 (for ten rounds, an A/A pair does that by chance once
in 512 runs).
"""

import statistics
import time

import torch
from pydantic import BaseModel, ConfigDict, Field

from examples.deployment import Mode, deploy
from examples.model import ExampleInputs, ExampleModel
from operators import KernelSelection, use_kernel_profile

ROUNDS = 10
CALLS_PER_ROUND = 5
WARMUP_CALLS = 3


class SpeedRatio(BaseModel):
    """How much faster `candidate` ran than `baseline`, per round and overall."""

    model_config = ConfigDict(frozen=True)

    candidate: str
    baseline: str
    median: float = Field(description="median over rounds of baseline time / candidate time")
    lowest: float
    highest: float
    faster_beyond_noise: bool = Field(description="every round's ratio above 1")
    slower_beyond_noise: bool = Field(description="every round's ratio below 1")

    def describe(self, candidate: str | None = None, baseline: str | None = None) -> str:
        """The ratio in words, the profiles named as given (their names by default)."""
        return (
            f"{candidate or self.candidate} x{self.median:.3f} against {baseline or self.baseline} "
            f"(rounds {self.lowest:.3f}-{self.highest:.3f})"
        )


class PairedTiming(BaseModel):
    """One batch size: every profile's forward time and the ratios between them."""

    model_config = ConfigDict(frozen=True)

    batch: int
    mode: str
    clock: str
    rounds: int
    calls_per_round: int
    deployed: dict[str, str] = Field(
        default_factory=dict, description="profiles deployed in another mode than `mode`"
    )
    median_ms: dict[str, float] = Field(description="per profile, the median round's figure")
    round_ms: dict[str, list[float]] = Field(description="per profile, each round's figure")
    ratios: list[SpeedRatio]

    def label(self, profile: str) -> str:
        """The profile's name, with its mode where it was deployed in another one."""
        mode = self.deployed.get(profile)
        return f"{profile} ({mode})" if mode else profile

    def described(self, ratio: SpeedRatio) -> str:
        """`ratio` in words, each profile with the mode it ran in where that is not `mode`."""
        return ratio.describe(self.label(ratio.candidate), self.label(ratio.baseline))

    def ratio(self, candidate: str, baseline: str) -> SpeedRatio | None:
        for ratio in self.ratios:
            if (ratio.candidate, ratio.baseline) == (candidate, baseline):
                return ratio
        return None


def time_paired(
    model: ExampleModel,
    inputs: ExampleInputs,
    profiles: dict[str, KernelSelection],
    pairs: list[tuple[str, str]],
    mode: Mode = "graph",
    rounds: int = ROUNDS,
    calls: int = CALLS_PER_ROUND,
    deployed: dict[str, Mode] | None = None,
) -> PairedTiming:
    """Time every profile's forward interleaved; `pairs` are the (candidate, baseline) ratios.
    Each profile is deployed in `mode` unless `deployed` names another for it (`stock` as a
    user deploys it, say)."""
    deployed = {name: way for name, way in (deployed or {}).items() if name in profiles}
    forwards = {}
    for name in deployment_order(profiles, deployed, mode):
        selection = profiles[name]
        with use_kernel_profile(selection):
            forwards[name] = deploy(model, deployed.get(name, mode), inputs)
            for _ in range(WARMUP_CALLS):
                forwards[name](inputs)
    names = list(profiles)
    round_ms: dict[str, list[float]] = {name: [] for name in names}
    for round_index in range(rounds):
        shift = round_index % len(names)
        for name in names[shift:] + names[:shift]:
            with use_kernel_profile(profiles[name]):
                spans = call_times(forwards[name], inputs, calls)
            round_ms[name].append(statistics.median(spans))
    ratios = [_ratio(candidate, baseline, round_ms) for candidate, baseline in pairs]
    cuda = inputs.noise.device.type == "cuda"
    return PairedTiming(
        batch=inputs.noise.shape[0],
        mode=mode,
        clock="CUDA events around each forward" if cuda else "host clock",
        rounds=rounds,
        calls_per_round=calls,
        deployed={name: way for name, way in deployed.items() if way != mode},
        median_ms={name: round(statistics.median(ms), 3) for name, ms in round_ms.items()},
        round_ms={name: [round(value, 4) for value in ms] for name, ms in round_ms.items()},
        ratios=ratios,
    )


def figures_of(
    timing: PairedTiming, profile: str, name: str, baselines: tuple[str, ...]
) -> PairedTiming:
    """What `timing` measured for `profile` and `baselines` alone, `profile` named `name`: their
    rounds ran interleaved in one session, so these ratios are as paired as any it measured."""
    kept = (profile, *baselines)
    round_ms = {(name if key == profile else key): timing.round_ms[key] for key in kept}
    median_ms = {(name if key == profile else key): timing.median_ms[key] for key in kept}
    deployed = {key: way for key, way in timing.deployed.items() if key in baselines}
    return timing.model_copy(
        update={
            "round_ms": round_ms,
            "median_ms": median_ms,
            "deployed": deployed,
            "ratios": [_ratio(name, baseline, round_ms) for baseline in baselines],
        }
    )


def deployment_order(profiles: dict, deployed: dict[str, Mode], mode: Mode) -> list[str]:
    """The profiles in the order they are deployed: every one in `mode` first, those deployed
    another way (`stock` under `reduce-overhead`) after them, so no CUDA graph of ours is
    captured once Inductor's CUDA graph trees hold their memory pool. (The 8-profile timing of
    an optimize batch, which captured graphs after deploying `stock`, failed on an H100 with
    `unspecified launch failure`; the 3-profile `verify`, `stock` deployed last, runs.)"""
    return sorted(profiles, key=lambda name: deployed.get(name, mode) != mode)


def _ratio(candidate: str, baseline: str, round_ms: dict[str, list[float]]) -> SpeedRatio:
    per_round = [b / c for b, c in zip(round_ms[baseline], round_ms[candidate], strict=True)]
    return SpeedRatio(
        candidate=candidate,
        baseline=baseline,
        median=round(statistics.median(per_round), 4),
        lowest=round(min(per_round), 4),
        highest=round(max(per_round), 4),
        faster_beyond_noise=min(per_round) > 1.0,
        slower_beyond_noise=max(per_round) < 1.0,
    )


def call_times(forward, inputs: ExampleInputs, calls: int) -> list[float]:
    """Milliseconds of each of `calls` forwards: CUDA events on a GPU, else the host clock."""
    if inputs.noise.device.type != "cuda":
        spans = []
        for _ in range(calls):
            start = time.perf_counter()
            forward(inputs)
            spans.append((time.perf_counter() - start) * 1e3)
        return spans
    torch.cuda.synchronize()
    events = []
    for _ in range(calls):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        forward(inputs)
        end.record()
        events.append((start, end))
    torch.cuda.synchronize()
    return [start.elapsed_time(end) for start, end in events]
