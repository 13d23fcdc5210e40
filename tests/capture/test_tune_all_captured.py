"""`controller tune-all --captured`: each operator the capture saw is tuned on the workloads
`generate --captured` makes of it (weight = call count), and a bad capture is refused in one
line, exit 2, before a batch folder exists."""

import json
import shutil
import sys
from pathlib import Path

import pytest

from controller.cli import main
from controller.runs.store import RunStore
from gates.tasks.captured import LAYOUTS_FILE, captured_operators
from gates.tasks.package import load_task
from operators import REGISTRY
from operators.call_capture import load_capture

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "batch"))
from batch_fixtures import make_target  # noqa: E402


@pytest.fixture(scope="module")
def target(tmp_path_factory) -> Path:
    """A real one-commit git repository carrying the ruff settings (it is only read)."""
    return make_target(tmp_path_factory.mktemp("target") / "repo")


def tune_all(runs: Path, target: Path, *extra: str) -> list[str]:
    """The cheapest real batch: autotune, one attempt, the CPU, no baseline preflight."""
    return [
        "tune-all",
        *extra,
        "--device",
        "cpu",
        "--agent",
        "autotune",
        "--unfenced",
        "--max-attempts",
        "1",
        "--no-preflight",
        "--target",
        str(target),
        "--runs-dir",
        str(runs),
    ]


def test_the_default_selection_is_every_operator_the_capture_saw(tiny_capture):
    saw = load_capture(tiny_capture).counts_by_operator()
    assert captured_operators(tiny_capture) == [n for n in REGISTRY.names() if n in saw]
    assert captured_operators(tiny_capture, ["rms_norm"]) == ["rms_norm"]


def test_a_bad_capture_is_one_line_and_exit_2_before_a_batch_exists(
    tiny_capture, target, tmp_path, capsys
):
    foreign = tmp_path / "foreign"
    shutil.copytree(tiny_capture, foreign)
    document = json.loads((foreign / "capture.json").read_text())
    document["layouts"][0]["operator"] = "fused_softmax"
    (foreign / "capture.json").write_text(json.dumps(document))
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "capture.json").write_text('{"driver": "x"}')
    runs = tmp_path / "runs"
    refusals = [
        (tmp_path / "missing", [], "holds no capture.json"),
        (broken, [], "is not a capture `controller capture-ops` wrote"),
        (foreign, [], "names operator 'fused_softmax', which is not registered here"),
        (tiny_capture, ["linear"], "holds no call of 'linear'"),
    ]
    for capture, operators, message in refusals:
        assert main(tune_all(runs, target, "--captured", str(capture), *operators)) == 2
        error = capsys.readouterr().err
        assert len(error.strip().splitlines()) == 1 and message in error, error
    assert not runs.exists()


@pytest.mark.slow
def test_tune_all_captured_tunes_an_operator_on_its_captured_workloads(
    tiny_capture, target, tmp_path, monkeypatch, capsys
):
    monkeypatch.setenv("CONTROLLER_DEVICE_LOCKS", str(tmp_path / "locks"))
    runs = tmp_path / "runs"
    argv = tune_all(runs, target, "--captured", str(tiny_capture), "ada_rms_norm")
    assert main(argv) == 1  # the one attempt is judged; on a CPU nothing can be promoted
    (batch,) = runs.glob("batch-*")
    record = json.loads((batch / "batch.json").read_text())
    assert record["capture"] == str(tiny_capture.resolve())
    assert record["operators"] == ["ada_rms_norm"]
    task = load_task(batch / "tasks" / "ada_rms_norm")
    calls = load_capture(tiny_capture).counts_by_operator()["ada_rms_norm"]
    assert "captured" in task.definition.tags
    assert sum(trace.weight for trace in task.workloads) == calls
    (run_dir,) = (batch / "runs" / "ada_rms_norm").glob("tune-*")
    assert RunStore(run_dir).manifest().work_item["task_digest"] == task.digest
    assert (run_dir / "prepared" / "task" / LAYOUTS_FILE).is_file()
    verdicts = run_dir / "attempts" / "0001" / "verdicts"
    correctness = json.loads((verdicts / "correctness.json").read_text())
    assert correctness["passed"], correctness["summary"]
    assert "captured in" in (batch / "summary.md").read_text()
    capsys.readouterr()

    assert main(["tune-all", "--resume", str(batch), "--captured", str(tmp_path)]) == 2
    assert "batch field 'capture'" in capsys.readouterr().err
    main(["tune", "run", "--resume", str(run_dir), "--runs-dir", str(run_dir.parent)])
    assert "resuming tune run" in capsys.readouterr().err  # the frozen captured task is current
