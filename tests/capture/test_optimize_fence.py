"""`controller optimize` judges its staged kernels in `verify`'s fenced child: a staged kernel
that rewrites the verdict's code in the process it runs in passes when the checks run in the
batch's own process (`--unfenced`) and fails when they run fenced, where the rewrite reaches
only the child, whose watch names it."""

import sys
from pathlib import Path

import pytest

import controller.verification.verify as verify
from controller.batch.record import RunOptions
from controller.optimize.device_steps import DeviceSteps
from operators.selection import KernelSelection

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "install"))
from test_verify import DEGRADED_SOURCE, degraded_profile  # noqa: E402

JUDGE_PATCHING_SOURCE = DEGRADED_SOURCE.replace(
    "def kernel(x, weight, eps=1e-6):\n",
    "def kernel(x, weight, eps=1e-6):\n"
    "    import controller.verification.verify as verify\n\n"
    "    original = verify.judged_report\n"
    "    passing = {'passed': True}\n"
    "    verify.judged_report = lambda *args: original(*args).model_copy(update=passing)\n",
)
"""The degraded rms_norm, which, the first time it runs, makes the verdict a pass."""


def steps(unfenced: bool) -> DeviceSteps:
    options = RunOptions(agent="autotune", device="cpu", target=".", unfenced=unfenced)
    return DeviceSteps(options, False, ["0"], "tiny", [1], 1, say=lambda line: None)


@pytest.mark.slow
def test_a_staged_kernel_that_rewrites_the_verdict_fails_only_where_it_cannot_reach_it(
    tmp_path, monkeypatch
):
    degraded_profile(tmp_path, "staged", JUDGE_PATCHING_SOURCE)
    selection = KernelSelection("staged", tuned_root=tmp_path, allow_unverified=True)
    fenced = steps(unfenced=False).numerics("all", selection)
    assert not fenced.passed and fenced.profile == "all"
    assert "replaced controller.verification.verify.judged_report" in fenced.notes[0]
    monkeypatch.setattr(verify, "judged_report", verify.judged_report)  # restored afterwards
    in_process = steps(unfenced=True).numerics("all", selection)
    assert in_process.passed  # the attack works where the kernel shares the judge's process


def test_staged_timing_on_a_machine_without_cuda_is_empty_not_a_failure(tmp_path):
    """The fenced timing is CUDA's; on a CPU the batch's check notes the model was not timed."""
    degraded_profile(tmp_path, "staged")
    selection = KernelSelection("staged", tuned_root=tmp_path, allow_unverified=True)
    profiles = {"all": selection, "none": KernelSelection("none")}
    assert steps(unfenced=False).time(profiles, [("all", "none")]) == []


def test_a_timing_child_that_dies_gives_no_figures_and_says_why(tmp_path):
    """A staged kernel that ends its process while it runs leaves no timing to trust: the batch
    gets none (so no kernel is kept) and the reason."""
    from controller.verification.fenced_verify import (
        TimedProfile,
        VerifyRequest,
        new_nonce,
        time_fenced,
    )

    degraded_profile(
        tmp_path,
        "dying",
        DEGRADED_SOURCE.replace(
            "    return (",
            "    print('the kernel gives up here', file=__import__('sys').stderr)\n"
            "    raise SystemExit(3)\n    return (",
        ),
    )
    request = VerifyRequest(
        profile="dying",
        tuned_root=tmp_path,
        size="tiny",
        batches=[1],
        inputs=1,
        time_it=True,
        device="cpu",
        nonce=new_nonce(),
        timed={"all": TimedProfile(profile="dying", tuned_root=tmp_path)},
        pairs=[("all", "none")],
    )
    log = tmp_path / "verify" / "all-timing.log"
    timing, failure = time_fenced(request, log=log)
    assert timing == [] and "exited with code 3" in failure
    assert f"(its output: {log})" in failure
    assert "the kernel gives up here" in log.read_text()  # the child's whole stderr is kept
