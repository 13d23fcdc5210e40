"""Progress for the person waiting: one line per step with its elapsed time when stdout is a
pipe, and the logging hook lower layers (gates, the evaluator) report their phases through."""

import logging
import re
import subprocess
import sys

from engine_fixtures import GreetingAgent, TinyFlow, double_fence, make_target, new_tiny_run

from controller.runs.engine import Engine
from controller.runs.progress import PROGRESS_LOGGER, Progress

LINE = re.compile(r"^\[ *\d+\.\d+s\] ")


def test_progress_lines_appear_when_stdout_is_a_pipe():
    program = (
        "from controller.runs.progress import Progress\n"
        "progress = Progress()\n"
        "progress.note('created -> prepared')\n"
        "with progress.phase('attempt 1: gates checking'):\n"
        "    pass\n"
        "print(progress.mode)\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, check=True
    )
    lines = completed.stdout.splitlines()
    assert lines[-1] == "lines"
    assert all(LINE.match(line) for line in lines[:-1])
    assert [LINE.sub("", line) for line in lines[:-1]] == [
        "created -> prepared",
        "attempt 1: gates checking",
    ]


def test_a_run_reports_each_attempt_agent_and_gate_as_lines(tmp_path, capsys):
    store = new_tiny_run(tmp_path / "runs", make_target(tmp_path / "target"))
    engine = Engine(
        store, TinyFlow(), GreetingAgent(good_from=2), double_fence(store.run_dir), Progress()
    )
    assert engine.run().state == "done"
    lines = capsys.readouterr().out.splitlines()
    assert lines and all(LINE.match(line) for line in lines)
    text = "\n".join(LINE.sub("", line) for line in lines)
    assert "attempt 1: started (agent test:greeting)" in text
    assert re.search(r"attempt 1: agent finished in \d+\.\d s \(1 turns, 150 tokens", text)
    assert re.search(r"attempt 1: gate greeting: FAIL in \d+\.\d s \(got 'hullo", text)
    assert re.search(r"attempt 2: gate greeting: pass in \d+\.\d s", text)
    assert "published -> done" in text


def test_lower_layers_report_through_the_progress_logger(capsys):
    progress = Progress(mode="lines")
    with progress.listening():
        logging.getLogger(PROGRESS_LOGGER).info("evaluator: correctness on %d workloads", 3)
    logging.getLogger(PROGRESS_LOGGER).info("after the run: not shown")
    lines = capsys.readouterr().out.splitlines()
    assert [LINE.sub("", line) for line in lines] == ["evaluator: correctness on 3 workloads"]


def test_progress_off_prints_nothing(capsys):
    progress = Progress(False)
    progress.note("created -> prepared")
    with progress.phase("working"), progress.listening():
        logging.getLogger(PROGRESS_LOGGER).info("evaluator phase")
    assert capsys.readouterr().out == ""
