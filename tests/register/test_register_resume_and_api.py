"""A register run driven by the Anthropic backend, and one resumed after SIGKILL mid-gates."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from register_session import SITE_ARGUMENTS, expected_tree, git, good_actions, only_run

from controller.cli import main
from tests.agents.protocol_server import Call, ProtocolServer, Reply

REPO = Path(__file__).resolve().parents[2]


def test_the_anthropic_backend_reaches_a_branch(target, tmp_path, fence_arguments, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key-not-secret")
    calls = [
        Call(name=a["tool"], arguments={k: v for k, v in a.items() if k != "tool"})
        for a in good_actions()
    ]
    with ProtocolServer(
        default=Reply(text="Registered gelu_tanh and routed both sites.")
    ) as server:
        server.queue(Reply(text="Writing the operator, its tests and the routing.", calls=calls))
        code = main(
            [
                "register",
                "run",
                "--target",
                str(target),
                "--operator",
                "gelu_tanh",
                *SITE_ARGUMENTS,
                "--agent",
                "anthropic:claude-test",
                "--base-url",
                server.url,
                *fence_arguments,
                "--runs-dir",
                str(tmp_path / "runs"),
            ]
        )
        assert server.model_requests(), "the agent never called the model"
    assert code == 0
    branch = json.loads((only_run(tmp_path) / "publish.json").read_text())["branch"]
    assert git(target, "rev-parse", f"{branch}^{{tree}}") == expected_tree(target, tmp_path)


def test_resume_after_sigkill_mid_gates_reaches_the_same_branch(
    target, write_session, tmp_path, fence_arguments
):
    session = write_session(good_actions())
    runs = tmp_path / "runs"
    command = [
        sys.executable,
        "-m",
        "controller",
        "register",
        "run",
        "--target",
        str(target),
        "--operator",
        "gelu_tanh",
        *SITE_ARGUMENTS,
        "--agent",
        f"scripted:{session}",
        *fence_arguments,
        "--runs-dir",
        str(runs),
    ]
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
        deadline = time.monotonic() + 300
        while not list(runs.glob("register-*/attempts/0001/gates/check-1/probe")):
            assert process.poll() is None, "the run ended before its gates started"
            assert time.monotonic() < deadline, "the gates never started"
            time.sleep(0.2)
        time.sleep(1.0)
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    run = only_run(tmp_path)
    assert json.loads((run / "state.json").read_text())["state"] == "checking"
    assert not (run / "publish.json").exists()

    assert main(["register", "run", "--resume", str(run), "--runs-dir", str(runs)]) == 0
    branch = json.loads((run / "publish.json").read_text())["branch"]
    assert git(target, "rev-parse", f"{branch}^{{tree}}") == expected_tree(target, tmp_path)
    events = [json.loads(line) for line in (run / "journal.jsonl").read_text().splitlines()]
    assert [e["attempt"] for e in events if e["kind"] == "agent_started"] == [1]
    second_check = run / "attempts" / "0001" / "gates" / "check-2"
    assert (second_check / "probe" / "out" / "probe.json").is_file()
