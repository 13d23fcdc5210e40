"""Paired, interleaved model timing and the model-level latency gate built on it: a profile
that slows the model is reported slower beyond noise and fails `verify`'s speed check."""

import json
from pathlib import Path

import pytest

from controller.verification.verify import speed_failures
from examples.config import TINY
from examples.model import build_model, make_inputs
from examples.paired_timing import PairedTiming, SpeedRatio, deployment_order, time_paired
from operators.environment import current_kernel_environment
from operators.profiles import file_digest
from operators.selection import KernelSelection

SLOW_SOURCE = '''"""rms_norm that sleeps first: right, and slower by a known amount."""

import time

from operators.catalog.rms_norm import rms_norm_reference


def kernel(x, weight, eps=1e-6):
    time.sleep(0.01)
    return rms_norm_reference(x, weight, eps)


def applies(*args, **kwargs):
    return True
'''


def slow_profile(root: Path) -> Path:
    folder = root / "slow"
    (folder / "rms_norm").mkdir(parents=True)
    source = folder / "rms_norm" / "kernel.py"
    source.write_text(SLOW_SOURCE)
    profile = {
        "name": "slow",
        "environment": current_kernel_environment().model_dump(),
        "operators": {"rms_norm": {"source": "rms_norm/kernel.py"}},
        "files": {"rms_norm/kernel.py": file_digest(source)},
    }
    (folder / "profile.json").write_text(json.dumps(profile))
    return root


def test_a_slower_profile_is_slower_beyond_noise_in_every_round(tmp_path):
    # The references stand in for the baseline: under the interpreter `none` takes seconds.
    model = build_model(TINY, 0, "cpu")
    inputs = make_inputs(TINY, 1, 0, "cpu")
    profiles = {
        "slow": KernelSelection("slow", tuned_root=slow_profile(tmp_path), allow_unverified=True),
        "torch": KernelSelection("torch"),
    }
    timing = time_paired(
        model, inputs, profiles, [("slow", "torch")], mode="eager", rounds=3, calls=2
    )
    assert timing.rounds == 3 and all(len(ms) == 3 for ms in timing.round_ms.values())
    (ratio,) = timing.ratios
    assert ratio.slower_beyond_noise and not ratio.faster_beyond_noise
    assert ratio.highest < 1 and timing.median_ms["slow"] > timing.median_ms["torch"]


def paired(lowest: float, highest: float) -> PairedTiming:
    ratio = SpeedRatio(
        candidate="h200",
        baseline="none",
        median=(lowest + highest) / 2,
        lowest=lowest,
        highest=highest,
        faster_beyond_noise=lowest > 1,
        slower_beyond_noise=highest < 1,
    )
    return PairedTiming(
        batch=8,
        mode="graph",
        clock="CUDA events",
        rounds=10,
        calls_per_round=5,
        median_ms={"h200": 20.0, "none": 21.0},
        round_ms={"h200": [20.0], "none": [21.0]},
        ratios=[ratio],
    )


@pytest.mark.parametrize(
    ("lowest", "highest", "fails"),
    [(1.02, 1.06, False), (0.99, 1.06, True), (0.9, 0.95, True)],
)
def test_the_speed_gate_needs_every_round_faster_than_none(lowest, highest, fails):
    failures = speed_failures("h200", [paired(lowest, highest)])
    assert bool(failures) == fails
    if fails:
        assert "batch 8" in failures[0] and "against none" in failures[0]


def test_the_speed_gate_has_nothing_to_say_about_none_itself():
    assert speed_failures("none", [paired(0.9, 0.95)]) == []


def at_batch(batch: int, lowest: float, highest: float) -> PairedTiming:
    return paired(lowest, highest).model_copy(update={"batch": batch})


def test_a_batch_the_profile_does_not_touch_neither_passes_nor_fails_it():
    """Kernels apply only where they won: batch 8 reads within noise of `none`, which is no
    failure while batch 1 is faster; slower beyond noise at any batch fails."""
    assert speed_failures("h200", [at_batch(1, 1.5, 1.6), at_batch(8, 0.998, 1.02)]) == []
    (slower,) = speed_failures("h200", [at_batch(1, 1.5, 1.6), at_batch(8, 0.97, 0.99)])
    assert slower.startswith("batch 8:") and "slower beyond noise" in slower
    (nowhere,) = speed_failures("h200", [at_batch(1, 0.99, 1.03), at_batch(8, 0.998, 1.02)])
    assert nowhere.startswith("faster than none beyond noise at no batch")


def test_a_baseline_deployed_another_way_is_timed_and_named_that_way(tmp_path, monkeypatch):
    """`stock` beside CUDA graphs runs as a user deploys it: the mode reaches the deployment,
    and the figures and ratios name it."""
    import examples.paired_timing as paired_timing

    modes = {}
    real_deploy = paired_timing.deploy

    def recording_deploy(model, mode, inputs):
        from operators import active_selection

        modes[active_selection().profile] = mode
        return real_deploy(model, "eager", inputs)

    monkeypatch.setattr(paired_timing, "deploy", recording_deploy)
    model = build_model(TINY, 0, "cpu")
    inputs = make_inputs(TINY, 1, 0, "cpu")
    profiles = {"stock": KernelSelection("stock"), "torch": KernelSelection("torch")}
    timing = time_paired(
        model,
        inputs,
        profiles,
        [("torch", "stock")],
        mode="eager",
        rounds=2,
        calls=1,
        deployed={"stock": "reduce-overhead", "torch": "eager", "absent": "compile"},
    )
    assert modes == {"torch": "eager", "stock": "reduce-overhead"}
    assert list(modes) == ["torch", "stock"]  # deployed in that order, `stock` named first
    assert timing.deployed == {"stock": "reduce-overhead"}
    assert timing.label("stock") == "stock (reduce-overhead)" and timing.label("torch") == "torch"
    assert "against stock (reduce-overhead)" in timing.described(timing.ratios[0])


def test_a_baseline_that_cannot_be_compiled_is_timed_in_a_graph_and_the_report_says_so(
    monkeypatch,
):
    """A compiler failure of the `stock` deployment costs the comparison's fairness, said in a
    note, not the verification; a failure of the profiles' own forwards still propagates."""
    import examples.paired_timing as paired_timing
    from controller.verification.verify import time_beside_baselines

    real_deploy = paired_timing.deploy

    def deploy_without_compiler(model, mode, inputs):
        if mode == "reduce-overhead":
            raise RuntimeError("inductor: no compiler here\nsecond line")
        return real_deploy(model, "eager", inputs)

    monkeypatch.setattr(paired_timing, "deploy", deploy_without_compiler)
    model = build_model(TINY, 0, "cpu")
    inputs = make_inputs(TINY, 1, 0, "cpu")
    profiles = {"torch": KernelSelection("torch"), "stock": KernelSelection("stock")}
    notes: list[str] = []
    timing = time_beside_baselines(model, inputs, profiles, [("torch", "stock")], notes)
    assert timing.deployed == {} and timing.label("stock") == "stock"
    (note,) = notes
    assert "batch 1: the baselines could not be deployed" in note
    assert "RuntimeError: inductor: no compiler here)" in note

    def failing_deploy(model, mode, inputs):
        raise ValueError("the profile's own failure")

    monkeypatch.setattr(paired_timing, "deploy", failing_deploy)
    with pytest.raises(ValueError, match="the profile's own failure"):
        time_beside_baselines(model, inputs, profiles, [("torch", "stock")], [])


def test_every_graph_is_captured_before_a_compiled_baseline_is_deployed():
    """Inductor's CUDA graph trees are built last, after every profile's own CUDA graph (the
    other order is the one an optimize batch's timing failed in on an H100)."""
    profiles = dict.fromkeys(["all", "none", "stock", "without-a", "without-b"])
    order = deployment_order(profiles, {"stock": "reduce-overhead"}, "graph")
    assert order == ["all", "none", "without-a", "without-b", "stock"]
    assert deployment_order(profiles, {}, "graph") == list(profiles)
