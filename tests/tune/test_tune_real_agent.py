"""A tune run driven the way a real coding agent drives it: the Anthropic backend against the
loopback API server, under Landlock, on the CPU with the real evaluator.

The agent breaks the kernel, runs `controller evaluate` inside the fence and reads the failure,
fixes it and sees PASSED, runs pytest and ruff, and its attempt is judged by every gate. A 429
asking for a 20 s pause arrives mid-session: the run waits it out and goes on. Killed mid-call,
the run resumes with every answered call's usage in its totals.
"""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tune_fixtures import journal, only_run, tune_arguments

from controller.cli.tune_command import run_tune
from controller.runs.store import RunStore
from tests.agents.protocol_server import Call, Failure, ProtocolServer, Reply

REPO = Path(__file__).resolve().parents[2]
KERNEL = "solution/operators/catalog/rms_norm.py"
SCALED = "x * inverse_rms[:, None] * weight[None, :]"  # the fix puts the weight back
UNSCALED = "x * inverse_rms[:, None]"
WARPS_4, WARPS_2 = '"num_warps": 4', '"num_warps": 2'  # and tries other launch settings
EVALUATE = "controller evaluate task --solution solution --device cpu 2>&1 | tail -3"
PYTEST = "pytest -q -p no:cacheprovider"
QUICK_TEST = (
    "import torch\n\n\ndef test_the_reference_keeps_the_shape():\n"
    "    assert torch.ones(2, 3).shape == (2, 3)\n"
)


def bash(command: str) -> Call:
    return Call("bash", {"command": command})


def tool_results(request) -> list[str]:
    """The text of every tool result the agent sent back in one model request."""
    texts = []
    for message in request.body.get("messages", []):
        content = message.get("content")
        for block in content if isinstance(content, list) else []:
            if block.get("type") == "tool_result":
                inner = block.get("content")
                texts.append(inner if isinstance(inner, str) else json.dumps(inner))
    return texts


@pytest.mark.slow
def test_the_agent_evaluates_fixes_tests_and_lints_inside_landlock(
    tune_target, tmp_path, monkeypatch
):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key-not-secret")
    with ProtocolServer(default=Reply(text="The kernel passes; done.")) as server:
        server.queue(
            Reply(calls=[Call("edit", {"path": KERNEL, "old": SCALED, "new": UNSCALED})]),
            Reply(calls=[bash(EVALUATE)]),
            Failure(429, "rate_limit_error", "slow down", retry_after="20"),
            Reply(
                calls=[
                    Call("edit", {"path": KERNEL, "old": UNSCALED, "new": SCALED}),
                    Call("edit", {"path": KERNEL, "old": WARPS_4, "new": WARPS_2}),
                ]
            ),
            Reply(calls=[bash(EVALUATE)]),
            Reply(
                calls=[
                    bash(f"printf '{QUICK_TEST}' > $SCRATCH/test_quick.py"),
                    bash(f"cd $SCRATCH && {PYTEST} test_quick.py 2>&1 | tail -1"),
                    bash("ruff check solution && ruff format --check solution"),
                    bash("bash -lc true"),
                ]
            ),
        )
        arguments = tune_arguments(
            tmp_path / "runs",
            tune_target,
            operator="rms_norm",
            agent="anthropic:claude-test",
            base_url=server.url,
            fence="landlock",
            device="cpu",
            max_attempts=1,
        )
        started = time.monotonic()
        run_tune(arguments)
        waited = time.monotonic() - started
        requests = server.model_requests()
    seen = [tool_results(request) for request in requests]
    after_broken_evaluate, after_fixed_evaluate, after_checks = seen[3][-1], seen[5][-1], seen[6]
    assert "INCORRECT" in after_broken_evaluate, after_broken_evaluate
    assert "rms_norm: PASSED" in after_fixed_evaluate, after_fixed_evaluate
    pytest_line, ruff_output, shell = after_checks[-3:]
    assert "1 passed" in pytest_line, pytest_line
    assert "All checks passed!" in ruff_output and "already formatted" in ruff_output, ruff_output
    assert "exit code 0" in shell and "stderr" not in shell, shell  # start-up prints no error
    assert waited >= 20  # the 429's retry-after was honoured, not retried at once

    run_dir = only_run(tmp_path / "runs")
    check = json.loads((run_dir / "attempts" / "0001" / "check.json").read_text())
    passed = {
        gate: verdict["passed"]
        for gate, verdict in zip(check["gates"], check["verdicts"], strict=True)
    }
    assert passed["scope"] and passed["ruff"] and passed["correctness"], check


@pytest.mark.slow
def test_a_sigkill_mid_call_loses_no_usage_and_the_run_resumes(tune_target, tmp_path, monkeypatch):
    """Killed while the agent's third model call is in flight: the two answered calls are in
    the run's totals after --resume, exactly as the server counted them."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    runs = tmp_path / "runs"
    with ProtocolServer(default=Reply(text="done")) as server:
        server.queue(
            Reply(calls=[bash("true")], input_tokens=1000, output_tokens=50),
            Reply(calls=[bash("true")], input_tokens=2000, output_tokens=60),
            Reply(text="never seen", delay_s=120),
        )
        command = [
            sys.executable, "-m", "controller", "tune", "run", "--target", str(tune_target),
            "--operator", "rms_norm", "--agent", "anthropic:claude-test", "--base-url",
            server.url, "--fence", "landlock", "--device", "cpu", "--max-attempts", "2",
            "--runs-dir", str(runs),
        ]  # fmt: skip
        environment = {**os.environ, "PYTHONPATH": str(REPO)}
        process = subprocess.Popen(
            command,
            cwd=REPO,
            env=environment,
            start_new_session=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + 120
            while len(server.model_requests()) < 3:
                assert process.poll() is None, "the run ended before its third call"
                assert time.monotonic() < deadline, "the third call never came"
                time.sleep(0.1)
            time.sleep(0.5)
        finally:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        answered = server.model_requests()[:2]
        assert len(answered) == 2
        run_dir = only_run(runs)
        resumed = tune_arguments(runs, resume=str(run_dir), max_attempts=2)
        run_tune(resumed)
    spend = RunStore(run_dir).history().spend
    interrupted = [e for e in journal(run_dir) if e["kind"] == "attempt_interrupted"]
    assert interrupted[0]["usage"]["input_tokens"] == 3000
    assert interrupted[0]["usage"]["output_tokens"] == 110
    assert interrupted[0]["usage"]["calls"] == 2
    assert spend.input_tokens >= 3000 and spend.calls >= 3  # the resumed attempt's call too


@pytest.mark.slow
@pytest.mark.skipif(
    not (REPO / ".tools" / "node_modules" / ".bin" / "claude").exists(),
    reason="claude CLI not installed in .tools (run scripts/setup)",
)
def test_the_claude_cli_evaluates_fixes_and_lints_inside_landlock(
    tune_target, tmp_path, monkeypatch
):
    """The same loop through the real `claude` CLI in the fence: its Bash tool breaks the
    kernel, evaluates, fixes it, evaluates again and lints, and the attempt is judged."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key-not-secret")

    def shell(command: str) -> Reply:
        return Reply(calls=[Call("Bash", {"command": command, "description": "step"})])

    def replace(old: str, new: str) -> str:
        return f"sed -i 's/{old}/{new}/' {KERNEL}"

    with ProtocolServer(default=Reply(text="The kernel passes; done.")) as server:
        server.queue(
            shell(replace(r" \* weight\[None, :\]", "")),
            shell(EVALUATE),
            shell(
                replace(
                    r"x \* inverse_rms\[:, None\])", r"x * inverse_rms[:, None] * weight[None, :])"
                )
                + " && "
                + replace('"num_warps": 4', '"num_warps": 2')
            ),  # fmt: skip
            shell(EVALUATE),
            shell("ruff check solution && ruff format --check solution"),
        )
        arguments = tune_arguments(
            tmp_path / "runs",
            tune_target,
            operator="rms_norm",
            agent="claude:claude-sonnet-4-6",
            base_url=server.url,
            fence="landlock",
            device="cpu",
            max_attempts=1,
        )
        run_tune(arguments)
        history = json.dumps(server.model_requests()[-1].body)  # the whole conversation
    failed, passed_at = history.find("INCORRECT"), history.find("rms_norm: PASSED")
    assert 0 <= failed < passed_at, history[-3000:]
    assert "All checks passed!" in history and "already formatted" in history
    run_dir = only_run(tmp_path / "runs")
    check = json.loads((run_dir / "attempts" / "0001" / "check.json").read_text())
    passed = {
        gate: verdict["passed"]
        for gate, verdict in zip(check["gates"], check["verdicts"], strict=True)
    }
    assert passed["scope"] and passed["ruff"] and passed["correctness"], check
