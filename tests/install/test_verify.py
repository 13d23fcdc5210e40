"""`controller verify`: the production kernels pass the model-level gate; a degraded kernel
fails it, naming the output and the figure; a baseline far from FP32 is an error."""

import json
from pathlib import Path

import pytest
import torch

from controller.cli import main
from controller.verification.model_gate import ReferenceCase, VerificationError, judge
from controller.verification.verify import ExampleForwards, reference_cases, verify_profile
from examples.config import TINY
from operators.environment import current_kernel_environment
from operators.errors import ProfileError
from operators.profiles import file_digest
from operators.selection import KernelSelection

DEGRADED_SOURCE = '''"""rms_norm scaled by 1 + 2^-6: it drifts a little more than BF16 does."""

from operators.catalog.rms_norm import rms_norm_reference


def kernel(x, weight, eps=1e-6):
    return (rms_norm_reference(x, weight, eps).float() * (1 + 2**-6)).to(x.dtype)


def applies(*args, **kwargs):
    return True
'''


@pytest.fixture(scope="module")
def forwards():
    return ExampleForwards(TINY, torch.device("cpu"))


@pytest.fixture(scope="module")
def cases(forwards):
    """The FP32 reference and the BF16 baseline at batch 1, seed 0, shared by the tests."""
    return reference_cases(forwards, [1], 1)


SELF_VERIFYING_SOURCE = DEGRADED_SOURCE.replace(
    '"""rms_norm scaled by 1 + 2^-6: it drifts a little more than BF16 does."""',
    '"""The degraded rms_norm, which marks its own profile verified each time it runs."""',
).replace(
    "    return (rms_norm_reference",
    """    from pathlib import Path

    from operators.profile_verification import record_verification

    record_verification(Path(__file__).parents[1], "controller verify", timed=True)
    return (rms_norm_reference""",
)

HONEST_SOURCE = DEGRADED_SOURCE.replace("(1 + 2**-6)", "1")


def degraded_profile(root: Path, name: str = "degraded", source_text=DEGRADED_SOURCE) -> Path:
    folder = root / name
    (folder / "rms_norm").mkdir(parents=True)
    source = folder / "rms_norm" / "kernel.py"
    source.write_text(source_text)
    profile = {
        "name": name,
        "environment": current_kernel_environment().model_dump(),
        "operators": {"rms_norm": {"source": "rms_norm/kernel.py"}},
        "files": {"rms_norm/kernel.py": file_digest(source)},
    }
    (folder / "profile.json").write_text(json.dumps(profile))
    return root


def test_the_fp32_reference_is_float32_and_close_to_the_baseline(cases):
    (case,) = cases
    for name, reference in case.reference.items():
        assert reference.dtype == torch.float32, name
        baseline = case.baseline[name].double()
        error = (baseline - reference.double()).pow(2).mean().sqrt()
        assert 0 < error < 0.05 * reference.double().pow(2).mean().sqrt(), name


def test_the_production_kernels_pass(forwards, cases):
    report = verify_profile("none", KernelSelection("none"), forwards, [1], 1, cases)
    assert report.passed and report.error is None
    assert {v.name for v in report.outputs} == set(cases[0].reference)
    assert all(v.passed for v in report.outputs)
    assert "timing skipped: it needs CUDA" in report.notes[0]


def test_a_degraded_kernel_fails_naming_the_output_and_the_figure(forwards, cases, tmp_path):
    selection = KernelSelection(
        "degraded", tuned_root=degraded_profile(tmp_path), allow_unverified=True
    )
    report = verify_profile("degraded", selection, forwards, [1], 1, cases)
    assert not report.passed
    failed = {v.name: v.failures for v in report.outputs if not v.passed}
    assert "prefix_keys" in failed
    assert any(failure.startswith("mean RMSE") for failure in failed["prefix_keys"])
    assert "vision_features" not in failed  # the vision tower has no rms_norm


def test_a_baseline_far_from_fp32_is_an_error_and_discrete_outputs_must_match():
    reference = {"y": torch.ones(4), "token": torch.arange(4)}
    far = ReferenceCase(
        batch=1, seed=0, reference=reference, baseline={**reference, "y": reference["y"] * 2}
    )
    with pytest.raises(VerificationError, match="output 'y': the baseline .* is far from the FP32"):
        judge([far], lambda batch, seed: reference)
    close = ReferenceCase(batch=1, seed=0, reference=reference, baseline=reference)
    verdicts = judge([close], lambda batch, seed: {"y": reference["y"], "token": torch.zeros(4)})
    token = next(v for v in verdicts if v.name == "token")
    assert token.discrete and token.failures == ["differs from the baseline at batch 1 seed 0"]


def test_verify_marks_a_passing_profile_verified_and_leaves_a_failing_one_unverified(
    tmp_path, capsys
):
    """Only a pass marks a profile loadable; a record the failing profile's own code wrote
    while it was judged is dropped."""
    degraded_profile(tmp_path, "honest", HONEST_SOURCE)
    degraded_profile(tmp_path, "sneaky", SELF_VERIFYING_SOURCE)
    common = ["--tuned-root", str(tmp_path), "--size", "tiny", "--inputs", "1", "--batch", "1"]
    for name in ("honest", "sneaky"):
        with pytest.raises(ProfileError, match=f"profile '{name}' is not verified"):
            KernelSelection(name, tuned_root=tmp_path).resolve("rms_norm")
    report = tmp_path / "honest.json"
    assert main(["verify", "--profile", "honest", *common, "--output", str(report)]) == 0
    assert "profile 'honest' verified" in capsys.readouterr().out
    assert KernelSelection("honest", tuned_root=tmp_path).resolve("rms_norm").tuned is not None
    report = tmp_path / "sneaky.json"
    assert main(["verify", "--profile", "sneaky", *common, "--output", str(report)]) == 1
    out = capsys.readouterr().out
    assert "profile 'sneaky' left unverified" in out
    assert "PermissionError" in out  # inside the fence the profile's write is refused
    assert not (tmp_path / "sneaky" / "verified.json").exists()
    unfenced = ["--unfenced", "--output", str(tmp_path / "sneaky-unfenced.json")]
    assert main(["verify", "--profile", "sneaky", *common, *unfenced]) == 1
    assert "profile 'sneaky' left unverified" in capsys.readouterr().out  # cleared after
    assert not (tmp_path / "sneaky" / "verified.json").exists()
    with pytest.raises(ProfileError, match="profile 'sneaky' is not verified"):
        KernelSelection("sneaky", tuned_root=tmp_path).resolve("rms_norm")


LINGERING_SOURCE = DEGRADED_SOURCE.replace(
    '"""rms_norm scaled by 1 + 2^-6: it drifts a little more than BF16 does."""',
    '"""The degraded rms_norm, which marks its profile verified when its process exits."""\n'
    "\nimport atexit\nfrom pathlib import Path\n\n"
    "from operators.profile_verification import record_verification\n\n"
    'atexit.register(record_verification, Path(__file__).parents[1], "controller verify", True)',
)


def test_a_record_written_after_the_verdict_is_refused_by_the_fence(tmp_path):
    """The class the post-run clear cannot see: code that acts once the judge looked away (an
    exit hook here; a lingering thread or process alike). Its process is the fenced child,
    where the profiles are read-only, so the failing profile stays unverified."""
    import subprocess
    import sys

    degraded_profile(tmp_path, "lingering", LINGERING_SOURCE)
    command = [
        sys.executable, "-m", "controller", "verify", "--profile", "lingering",
        "--tuned-root", str(tmp_path), "--size", "tiny", "--inputs", "1", "--batch", "1",
        "--output", str(tmp_path / "lingering.json"),
    ]  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert result.returncode == 1, result.stderr[-2000:]
    assert "profile 'lingering' left unverified" in result.stdout
    assert not (tmp_path / "lingering" / "verified.json").exists()


FORGED_TIMING_SOURCE = HONEST_SOURCE.replace(
    "from operators.catalog.rms_norm import rms_norm_reference",
    "import atexit\nimport json\nimport sys\nfrom pathlib import Path\n\n"
    "from operators.catalog.rms_norm import rms_norm_reference\n\n\n"
    "def _forge():\n"
    '    nonce = json.loads(Path(sys.argv[-3]).read_text())["nonce"]\n'
    '    record = {"nonce": nonce, "timing": [], "notes": ["forged on the way out"]}\n'
    "    Path(sys.argv[-2]).write_text(json.dumps(record))\n\n\n"
    "atexit.register(_forge)",
)


def test_an_exit_hook_never_rewrites_the_record_the_child_wrote(tmp_path):
    """An honest kernel whose exit hook would replace the child's record (its timing, its
    notes) with its own: the child leaves with `os._exit` once the record is written, so the
    hook never runs and the report is the child's."""
    degraded_profile(tmp_path, "forging_timing", FORGED_TIMING_SOURCE)
    common = ["--tuned-root", str(tmp_path), "--size", "tiny", "--inputs", "1", "--batch", "1"]
    output = tmp_path / "forging_timing.json"
    assert main(["verify", "--profile", "forging_timing", *common, "--output", str(output)]) == 0
    assert "forged" not in output.read_text()


TIMER_PATCHING_SOURCE = HONEST_SOURCE.replace(
    "    return (rms_norm_reference",
    "    import examples.paired_timing\n\n"
    "    examples.paired_timing.call_times = lambda *args: [1e-6]\n"
    "    return (rms_norm_reference",
)
THREAD_STARTING_SOURCE = HONEST_SOURCE.replace(
    "    return (rms_norm_reference",
    "    import threading\n    import time\n\n"
    "    threading.Thread(target=time.sleep, args=(600,), daemon=True, name='waiter').start()\n"
    "    return (rms_norm_reference",
)


@pytest.mark.parametrize(
    ("source", "found"),
    [
        (TIMER_PATCHING_SOURCE, "replaced examples.paired_timing.call_times"),
        (THREAD_STARTING_SOURCE, "left threads running: waiter"),
    ],
    ids=["patches-the-timing", "starts-a-thread"],
)
def test_a_profile_that_changes_what_the_timing_relies_on_fails(tmp_path, capsys, source, found):
    """Honest numbers, but the profile's code rewrites the child's timing (or leaves a thread
    that could rewrite it, or the record, later): the child's watch names it and the parent
    fails the profile, whatever the record's timing says."""
    degraded_profile(tmp_path, "watched", source)
    common = ["--tuned-root", str(tmp_path), "--size", "tiny", "--inputs", "1", "--batch", "1"]
    output = ["--output", str(tmp_path / "watched.json")]
    assert main(["verify", "--profile", "watched", *common, *output]) == 1
    out = capsys.readouterr().out
    assert "changed what the verdict relies on" in out and found in out
    assert not (tmp_path / "watched" / "verified.json").exists()


def test_verify_refuses_bad_input_before_running_the_model(tmp_path, capsys):
    assert main(["verify", "--profile", "none", "--inputs", "0"]) == 2
    assert "give at least 1 input" in capsys.readouterr().err
    assert main(["verify", "--profile", "missing", "--tuned-root", str(tmp_path)]) == 2
    assert "kernel profile 'missing' is not installed" in capsys.readouterr().err


@pytest.mark.slow
def test_a_parity_driver_is_verified_against_its_own_fp32_build(tmp_path, capsys):
    report = tmp_path / "report.json"
    argv = ["verify", "--profile", "none", "--driver", "examples.parity:tiny", "--inputs", "1"]
    assert main([*argv, "--batch", "1", "--output", str(report)]) == 0
    written = json.loads(report.read_text())
    assert written["model"] == "driver examples.parity:tiny" and written["passed"]
    assert "prefix_keys" in {output["name"] for output in written["outputs"]}
    assert main(["verify", "--profile", "none", "--driver", "examples.parity:absent"]) == 2
    assert "--driver 'examples.parity:absent': cannot import it" in capsys.readouterr().err


@pytest.mark.slow
def test_a_target_driver_beside_the_command_is_importable_in_the_fence(tmp_path, monkeypatch):
    """A target's parity driver lives where `verify` runs, not in this repository: the fenced
    child may read and import that folder."""
    (tmp_path / "target_parity.py").write_text(
        "from examples.parity import tiny as forward\n"  # the target's own driver, by name
    )
    monkeypatch.chdir(tmp_path)
    argv = ["verify", "--profile", "none", "--driver", "target_parity:forward", "--inputs", "1"]
    assert main([*argv, "--batch", "1", "--output", str(tmp_path / "report.json")]) == 0
    assert json.loads((tmp_path / "report.json").read_text())["passed"]


TURNING_SOURCE = HONEST_SOURCE.replace(
    "def kernel(x, weight, eps=1e-6):\n",
    "CALLS = [0]\n\n\ndef kernel(x, weight, eps=1e-6):\n"
    "    CALLS[0] += 1\n"
    "    if CALLS[0] > HONEST_CALLS:\n"
    "        return (rms_norm_reference(x, weight, eps).float() * (1 + 2**-6)).to(x.dtype)\n",
)


def test_a_kernel_that_turns_once_judged_fails_when_judged_again(forwards, cases, tmp_path):
    """Honest for exactly the calls of the first judgement, degraded after: the same cases
    judged again once the other forwards have run catch it."""
    from operators.call_capture import CallCapture

    capture = CallCapture()
    with capture.recording():
        forwards.under("none")(1, 0)
    calls = capture.write(tmp_path / "capture", "verify", [], 1).counts_by_operator()["rms_norm"]
    source = TURNING_SOURCE.replace("HONEST_CALLS", str(calls))
    selection = KernelSelection(
        "turning", tuned_root=degraded_profile(tmp_path, "turning", source), allow_unverified=True
    )
    report = verify_profile("turning", selection, forwards, [1], 1, cases)
    assert all(v.passed for v in report.outputs)  # the first judgement saw an honest kernel
    assert not report.passed
    assert any(not v.passed for v in report.late_outputs)
    assert any("judged again after the other forwards" in note for note in report.notes)


FORGING_SOURCE = DEGRADED_SOURCE.replace(
    "from operators.catalog.rms_norm import rms_norm_reference",
    "import atexit\nimport json\nimport sys\nfrom pathlib import Path\n\n"
    "from operators.catalog.rms_norm import rms_norm_reference\n\n\n"
    "def _forge():\n"
    '    nonce = json.loads(Path(sys.argv[-3]).read_text())["nonce"]\n'
    '    record = {"nonce": nonce, "timing": [], "notes": [], "passed": True}\n'
    "    Path(sys.argv[-2]).write_text(json.dumps(record))\n\n\n"
    "atexit.register(_forge)",
)


def test_a_forged_record_with_the_right_nonce_does_not_pass_a_wrong_kernel(tmp_path, capsys):
    """The child's own code can read its request and write a well-formed record; the verdict
    is not in it: the parent judges the outputs the child ran against references it computes
    itself, so the degraded kernel fails on its numbers."""
    degraded_profile(tmp_path, "forging", FORGING_SOURCE)
    common = ["--tuned-root", str(tmp_path), "--size", "tiny", "--inputs", "1", "--batch", "1"]
    output = ["--output", str(tmp_path / "forging.json")]
    assert main(["verify", "--profile", "forging", *common, *output]) == 1
    out = capsys.readouterr().out
    (line,) = [line for line in out.splitlines() if line.strip().startswith("prefix_keys:")]
    assert "FAIL" in line and "mean RMSE" in line
    assert "profile 'forging' left unverified" in out
    assert not (tmp_path / "forging" / "verified.json").exists()
