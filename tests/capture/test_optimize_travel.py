"""An optimize batch carried to another machine: `controller pack` leaves the captured inputs
out, the resume there records the capture again and puts each file back only where its bytes
are the same, and a recording that differs stops the resume with one line, still resumable."""

import hashlib
import json
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from optimize_runs import journal_events, light_fake_steps, only_batch, optimize_argv

from controller.cli import build_parser, main
from controller.cli.optimize_command import run as run_optimize
from controller.errors import ControllerError
from controller.optimize.steps import OptimizeInterrupted
from controller.optimize.travel import TRAVEL_FILE
from operators.profiles import file_digest as digest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "batch"))
from batch_fixtures import make_target  # noqa: E402


@pytest.fixture(scope="module")
def target(tmp_path_factory) -> Path:
    return make_target(tmp_path_factory.mktemp("target") / "repo")


def stopped_at_timing(tiny_capture: Path):
    """The light fake machine whose model timing stops the batch, as a device call that ends."""
    steps = light_fake_steps(tiny_capture)

    def time(profiles, pairs, log=None):
        raise OptimizeInterrupted("the device call ended")

    steps.time = time
    return steps


def interrupted_batch(tiny_capture: Path, target: Path, tmp_path: Path) -> Path:
    """A batch whose device call ended at the model timing (exit 130, resumable)."""
    argv = optimize_argv(tmp_path, target)
    steps = stopped_at_timing(tiny_capture)
    assert run_optimize(build_parser().parse_args(argv), steps=steps) == 130
    return only_batch(tmp_path / "runs")


def git(folder: Path, *arguments: str) -> None:
    subprocess.run(["git", *arguments], cwd=folder, check=True, capture_output=True)


def committed_copy(batch: Path) -> Path:
    """An attempt's workspace as a tune run leaves it: a task fixture committed into its own
    repository, whose object folders git keeps read-only here as a judged commit's are."""
    workspace = batch / "tune" / "rms_norm" / "workspace"
    workspace.mkdir(parents=True)
    first = sorted((batch / "capture").rglob("*.safetensors"))[0]
    shutil.copyfile(first, workspace / "fixture.safetensors")
    git(workspace, "init", "--quiet")
    git(workspace, "add", "--all")
    identity = ["-c", "user.name=test", "-c", "user.email=test@localhost"]
    git(workspace, *identity, "commit", "--quiet", "-m", "task")
    for folder in (workspace / ".git" / "objects").glob("??"):
        folder.chmod(0o555)
    return workspace


def packed_and_carried(batch: Path, archive: Path) -> None:
    """Pack the batch, remove it, unpack the archive where it was: the next machine's copy."""
    assert main(["pack", str(batch), str(archive)]) == 0
    shutil.rmtree(batch)
    with tarfile.open(archive) as packed:
        packed.extractall(batch.parent, filter="data")


def test_a_packed_batch_resumes_on_another_machine_with_its_inputs_recorded_again(
    tiny_capture, target, tmp_path, capsys
):
    batch = interrupted_batch(tiny_capture, target, tmp_path)
    workspace = committed_copy(batch)
    fixtures = {p.relative_to(batch): digest(p) for p in batch.rglob("*.safetensors")}
    assert fixtures and {path.parts[0] for path in fixtures} == {"capture", "tune"}

    archive = tmp_path / "carried" / "batch.tar.gz"
    packed_and_carried(batch, archive)
    assert "captured input files" in capsys.readouterr().out
    with tarfile.open(archive) as packed:
        assert not [name for name in packed.getnames() if name.endswith(".safetensors")]
    assert not list(batch.rglob("*.safetensors"))
    listed = json.loads((batch / TRAVEL_FILE).read_text())["left_out"]
    files = {Path(i["path"]): i["sha256"] for i in listed if i["kind"] == "fixture"}
    assert files == fixtures
    (stored,) = [item for item in listed if item["kind"] == "git-object"]
    assert stored["sha256"] == fixtures[workspace.relative_to(batch) / "fixture.safetensors"]
    assert not (batch / stored["path"]).exists()

    resumed = run_optimize(
        build_parser().parse_args(["optimize", "--resume", str(batch)]),
        steps=light_fake_steps(tiny_capture),
    )
    assert resumed == 0
    assert {p.relative_to(batch): digest(p) for p in batch.rglob("*.safetensors")} == fixtures
    restored = [e["files"] for e in journal_events(batch) if e["kind"] == "fixtures_restored"]
    assert restored == [len(fixtures) + 1]  # and the git object
    assert (tmp_path / "tuned" / "fast" / "profile.json").is_file()
    assert not (batch / ".recapture").exists()
    git(workspace, "fsck", "--full", "--strict")  # the object written again is the same one
    shown = subprocess.run(
        ["git", "show", "HEAD:fixture.safetensors"], cwd=workspace, capture_output=True, check=True
    ).stdout
    assert hashlib.sha256(shown).hexdigest() == stored["sha256"]


def test_a_recording_that_differs_stops_the_resume_in_one_line_and_loses_nothing(
    tiny_capture, target, tmp_path, capsys
):
    batch = interrupted_batch(tiny_capture, target, tmp_path)
    packed_and_carried(batch, tmp_path / "batch.tgz")
    capsys.readouterr()

    drifted = tmp_path / "drifted-capture"  # the driver records other values on this machine
    shutil.copytree(tiny_capture, drifted)
    first = sorted(drifted.rglob("*.safetensors"))[0]
    first.write_bytes(first.read_bytes()[:-1] + bytes([first.read_bytes()[-1] ^ 1]))
    resume = build_parser().parse_args(["optimize", "--resume", str(batch)])
    with pytest.raises(ControllerError) as refused:  # `controller` prints it as one line, exit 2
        run_optimize(resume, steps=light_fake_steps(drifted))
    error = str(refused.value)
    assert len(error.splitlines()) == 1
    assert "does not reproduce 1 of the" in error and "carry the batch with its fixtures" in error
    assert json.loads((batch / "state.json").read_text())["state"] == "interrupted"
    assert not list(batch.rglob("*.safetensors")) and not (batch / ".recapture").exists()

    again = build_parser().parse_args(["optimize", "--resume", str(batch)])
    assert run_optimize(again, steps=light_fake_steps(tiny_capture)) == 0  # still resumable


def test_the_example_driver_records_the_same_bytes_twice(tiny_capture, tmp_path):
    """What the resume relies on for the example model: a second capture of the same driver
    writes every fixture byte for byte as the first did."""
    from controller.cli import main as controller

    again = tmp_path / "again"
    argv = ["capture-ops", "--output", str(again), "--steps", "2", "--"]
    assert controller([*argv, "controller.profiling.example_driver:forward", "tiny", "1"]) == 0
    first = {p.name: digest(p) for p in tiny_capture.rglob("*.safetensors")}
    assert {p.name: digest(p) for p in again.rglob("*.safetensors")} == first


def test_pack_refuses_what_it_cannot_pack_in_one_line(tmp_path, capsys):
    assert main(["pack", str(tmp_path / "nothing"), str(tmp_path / "a.tar.gz")]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_pack_refuses_a_batch_a_process_is_working_on_and_a_run_of_another_flow(
    tiny_capture, target, tmp_path, capsys
):
    batch = interrupted_batch(tiny_capture, target, tmp_path)
    from controller.runs.store import RunStore

    with RunStore(batch).locked():  # another process resuming it, say
        assert main(["pack", str(batch), str(tmp_path / "busy.tar.gz")]) == 2
    assert "is in use by another process" in capsys.readouterr().err
    assert not (tmp_path / "busy.tar.gz").exists() and not (batch / TRAVEL_FILE).exists()
    assert main(["pack", str(batch), str(tmp_path / "batch.zip")]) == 2
    assert "must end in .tar.gz or .tgz" in capsys.readouterr().err
