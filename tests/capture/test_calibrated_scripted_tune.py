"""The h200 flow on calibrated contracts (`device_call.sh h200` with H200_CALIBRATED=1), on the
CPU: a capture of two batches in one step, `calibrate` in FP64, `generate --captured`, then
the scripted attention session's `tune run --task` under Landlock, whose correctness gate
passes on the captured layouts, each case held against the FP64 oracle."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from controller.cli import main
from gates.calibration.contract_file import PACKAGE_FILE
from operators.call_capture import load_capture

SESSION = Path(__file__).resolve().parents[2] / "kernels/sessions/tune_split_kv_attention.json"
OPERATOR = "split_kv_attention"


@pytest.mark.slow  # about 35 s: capture, calibration and one interpreted evaluation
def test_the_scripted_kernel_passes_its_calibrated_captured_contract(tmp_path):
    capture, tasks, runs = tmp_path / "capture", tmp_path / "tasks", tmp_path / "runs"
    driver = ["controller.profiling.example_driver:forward_batches", "tiny", "1,2"]
    assert main(["capture-ops", "--output", str(capture), "--steps", "1", "--", *driver]) == 0
    layouts = [x for x in load_capture(capture).layouts if x.operator == OPERATOR]
    batches = {layout.inputs["q"].shape[0] for layout in layouts}
    assert batches == {1, 2}  # one step holds both batches' layouts
    assert main(["calibrate", str(capture), "--operators", OPERATOR, "--device", "cpu"]) == 0
    assert main(["generate", "--captured", str(capture), "--output", str(tasks), OPERATOR]) == 0
    assert (tasks / OPERATOR / PACKAGE_FILE).is_file()
    target = tmp_path / "target"
    target.mkdir()
    (target / "pyproject.toml").write_text((SESSION.parents[2] / "pyproject.toml").read_text())
    for command in (["init", "-q", "-b", "main"], ["add", "-A"]):
        subprocess.run(["git", "-C", str(target), *command], check=True)
    subprocess.run(
        ["git", "-C", str(target), "-c", "user.name=t", "-c", "user.email=t@localhost",
         "commit", "-qm", "target"],
        check=True,
    )  # fmt: skip
    tune = [
        sys.executable, "-m", "controller", "tune", "run", "--operator", OPERATOR,
        "--task", str(tasks / OPERATOR), "--device", "cpu", "--target", str(target),
        "--runs-dir", str(runs), "--max-attempts", "1", "--agent", f"scripted:{SESSION}",
    ]  # fmt: skip
    subprocess.run(tune, capture_output=True, text=True, timeout=300)
    (run,) = runs.glob("tune-*")
    evaluation = json.loads((run / "attempts/0001/evaluation.json").read_text())
    assert evaluation["status"] == "PASSED", evaluation["reason"]
    assert "judge_oracle" in evaluation["phase_seconds"]  # the FP64 oracle of every case
    correctness = json.loads((run / "attempts/0001/verdicts/correctness.json").read_text())
    assert correctness["passed"] is True
