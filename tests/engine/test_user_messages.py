"""What the person running the controller reads: every command it prints is a real command,
refusals name the flag and the rule before any run folder exists, a full disk or a broken
fence is one line and a resumable run, and a crash, a torn journal line or an edited manifest
is said plainly."""

import argparse
import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from engine_fixtures import GreetingAgent, TinyFlow, make_target
from engine_processes import frozen_source, harness, only_run

from controller.cli import build_parser, main
from controller.cli.new_run import NewRun
from controller.cli.register_command import run_register
from controller.cli.run_options import add_run_options, start_or_resume
from controller.errors import ControllerError
from controller.runs.faults import FAULT_VARIABLE, rearm
from controller.runs.launch import resume_command
from sandbox.errors import FenceError

ROOT = Path(__file__).resolve().parents[2]
PRINTED_COMMAND = re.compile(r"(?:with: |`|^\s*(?:\$ )?)(controller [^`\n]+?)`?$", re.MULTILINE)


@pytest.fixture
def target(tmp_path):
    return make_target(tmp_path / "target")


def command(argv, target, flow="register", agent=None):
    """A run of the tiny flow under a flow's name, through the shared run options."""
    parser = argparse.ArgumentParser()
    add_run_options(parser)
    return start_or_resume(
        parser.parse_args(argv),
        flow_name=flow,
        make_flow=lambda work_item, gate_settings: TinyFlow(),
        new_run=lambda: NewRun(target=target, work_item={"file": "hello.txt"}),
        agent=agent or GreetingAgent(good_from=2),
    )


def parses(text: str) -> argparse.Namespace:
    """Parse a printed `controller ...` command with the CLI's own parser (exit 2 if not)."""
    words = shlex.split(text)
    assert words[0] == "controller", text
    return build_parser().parse_args(words[1:])


def test_every_printed_resume_command_is_a_real_command(tmp_path, target, monkeypatch, capsys):
    runs = tmp_path / "runs"
    rearm()
    monkeypatch.setenv(FAULT_VARIABLE, "ENOSPC@write attempt/prompt.md")
    assert command(["--agent", "test", "--unfenced", "--runs-dir", str(runs)], target) == 75
    monkeypatch.delenv(FAULT_VARIABLE)
    run = only_run(runs)
    printed = capsys.readouterr().err
    assert main(["status", str(run)]) == 0
    printed += capsys.readouterr().out
    found = PRINTED_COMMAND.findall(printed)
    assert len(found) == 2, printed
    for text in found:
        arguments = parses(text)
        assert (arguments.func, Path(arguments.resume)) == (run_register, run)
    for flow in ("register", "tune"):
        arguments = parses(resume_command(flow, tmp_path / "a run"))
        assert arguments.resume == str(tmp_path / "a run") and arguments.func.__name__.endswith(
            flow
        )


def test_every_controller_command_in_the_guide_parses(capsys):
    guide = (ROOT / "docs" / "guide.md").read_text()
    blocks = "\n".join(re.findall(r"```(?:bash|sh|console)?\n(.*?)```", guide, re.DOTALL))
    lines = [line.strip() for line in blocks.replace("\\\n", " ").splitlines()]
    commands = [line for line in lines if line.startswith("controller ")]
    assert len(commands) >= 8
    for text in commands:
        try:
            parses(text.split(" #")[0])
        except SystemExit:
            pytest.fail(f"docs/guide.md: `{text}` does not parse: {capsys.readouterr().err}")


@pytest.mark.parametrize(
    ("flag", "value", "rule"),
    [
        ("--max-attempts", "0", "must be at least 1"),
        ("--max-minutes", "-5", "must be more than 0"),
        ("--max-dollars-per-attempt", "0", "must be more than 0"),
        ("--expected-attempt-seconds", "0", "must be more than 0"),
    ],
)
def test_a_refused_limit_names_its_flag_and_rule_before_a_run_folder(
    tmp_path, target, flag, value, rule
):
    runs = tmp_path / "runs"
    argv = ["--agent", "test", "--unfenced", "--runs-dir", str(runs), flag, value]
    with pytest.raises(ControllerError, match=f"^{flag} .*{rule}"):
        command(argv, target)
    assert not runs.exists()


def test_a_bad_operator_name_is_refused_before_a_run_folder(tmp_path, target, capsys):
    runs = tmp_path / "runs"
    argv = ["register", "run", "--target", str(target), "--operator", "Bad Name!"]
    argv += ["--call-site", "hello.py:f", "--agent", "claude", "--runs-dir", str(runs)]
    assert main(argv) == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith("controller: error: --operator 'Bad Name!': ") and "\n" not in error
    assert "lower snake_case" in error and not runs.exists()


class FenceFailingAgent(GreetingAgent):
    """Its first tool call meets a fence that cannot start, as Docker's duplicate mount did."""

    def run(self, session):
        raise FenceError('the docker fence could not create the container: "Duplicate mount"')


def test_a_fence_that_cannot_start_interrupts_the_run_as_a_fence_error(tmp_path, target, capsys):
    runs = tmp_path / "runs"
    argv = ["--agent", "test", "--unfenced", "--runs-dir", str(runs)]
    assert command(argv, target, agent=FenceFailingAgent()) == 75
    outcome = capsys.readouterr().err
    assert "interrupted: the fence could not run the agent's command: the docker fence" in outcome
    run = only_run(runs)
    report = (run / "evidence" / "report.md").read_text()
    assert "Attempt 1: interrupted\n\n- stopped before its end: the fence could not run" in report
    assert "cut short" not in report
    assert command(["--resume", str(run), "--runs-dir", str(runs)], target) == 0
    statuses = [
        a["status"] for a in json.loads((run / "evidence/report.json").read_text())["attempts"]
    ]
    assert statuses == ["interrupted", "accepted"]


def test_a_full_disk_is_one_line_naming_what_ran_out_and_where(tmp_path, target, monkeypatch):
    runs = tmp_path / "runs"
    rearm()
    monkeypatch.setenv(FAULT_VARIABLE, "ENOSPC@write attempt/check.json")
    assert command(["--agent", "test", "--unfenced", "--runs-dir", str(runs)], target) == 75
    run = only_run(runs)
    state = json.loads((run / "state.json").read_text())
    assert (state["state"], state["resume_state"]) == ("interrupted", "checking")
    assert state["reason"] == (
        f"no space left on the device writing {run / 'attempts' / '0001' / 'check.json'}"
    )
    monkeypatch.delenv(FAULT_VARIABLE)
    assert command(["--resume", str(run), "--runs-dir", str(runs)], target) == 0


def test_a_crash_is_journaled_and_reported_with_the_work_redone(tmp_path, target, capsys):
    source = frozen_source(tmp_path / "source")
    runs = tmp_path / "runs"
    # events: created, -> prepared, -> attempting, agent_started (killed right after)
    assert harness("start", runs, target, kill_at=4, python_path=source).returncode < 0
    run = only_run(runs)
    assert main(["status", str(run), "--json"]) == 0
    status = json.loads(capsys.readouterr().out)
    assert status["attempts"] == [{"number": 1, "status": "interrupted"}]
    assert harness("resume", run, python_path=source).returncode == 0
    crash = [e for e in map(json.loads, (run / "journal.jsonl").open()) if "sentence" in e]
    sentence = (
        "resumed after a crash in state attempting; redoing nothing of attempt 1: its agent "
        "session was cut short, it is recorded as interrupted, counts against the budget and "
        "is not replayed"
    )
    assert [e["sentence"] for e in crash] == [sentence]
    assert f"## Interruptions\n\n- {sentence}" in (run / "evidence" / "report.md").read_text()


def test_status_and_report_show_an_edited_or_torn_run_read_only(tmp_path, target, capsys):
    runs = tmp_path / "runs"
    assert command(["--agent", "test", "--unfenced", "--runs-dir", str(runs)], target) == 0
    run = only_run(runs)
    stored = json.loads((run / "manifest.json").read_text())
    stored["manifest"]["limits"]["max_attempts"] = 9
    (run / "manifest.json").write_text(json.dumps(stored))
    with (run / "journal.jsonl").open("a") as journal:
        journal.write('{"seq": 99, "kind": "tor')
    capsys.readouterr()
    for verb in ("status", "report"):
        assert main([verb, str(run)]) == 0
        captured = capsys.readouterr()
        assert "state done" in captured.out or "Outcome: accepted" in captured.out
        assert "warning: manifest.json was edited" in captured.err
        assert "warning: journal.jsonl ends in a torn line (24 bytes" in captured.err
    with pytest.raises(ControllerError, match="manifest field 'limits.max_attempts'"):
        command(["--resume", str(run), "--runs-dir", str(runs)], target)


@pytest.mark.parametrize(
    "argv",
    [
        ["evaluate", "{tmp}/no-task", "--solution", "{tmp}/no-solution"],
        ["register", "run", "--resume", "{tmp}/no-run"],
        ["register", "run", "--operator", "Bad Name!", "--call-site", "a.py:f", "--agent", "x"],
    ],
)
def test_a_wrong_argument_is_refused_before_torch_loads(tmp_path, argv):
    program = (
        "import sys\n"
        "from controller.cli import main\n"
        f"code = main({[word.format(tmp=tmp_path) for word in argv]!r})\n"
        "print(code, 'torch' in sys.modules)\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, cwd=tmp_path
    )
    assert completed.stdout.split() == ["2", "False"], completed.stderr
    assert completed.stderr.count("\n") == 1 and "controller: error: " in completed.stderr
