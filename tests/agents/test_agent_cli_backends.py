"""The claude and codex backends: the real CLIs, inside the real fence, against the loopback server.

The CLIs reach only the controller's key proxy; a stand-in executable covers the one case a real
CLI cannot be made to do offline on purpose: dying mid-stream.
"""

from __future__ import annotations

import json
import stat

import pytest

from controller.agents import make_agent
from controller.agents.claude_cli_agent import ClaudeCliAgent
from controller.agents.cli_launch import REPO_ROOT
from controller.agents.codex_cli_agent import CodexCliAgent
from controller.agents.key_proxy import PLACEHOLDER_KEY
from controller.errors import ControllerError
from sandbox.fence import get_fence
from tests.agents.conftest import SECRET_KEY
from tests.agents.protocol_server import Call, Failure, Reply

BIN = REPO_ROOT / ".tools" / "node_modules" / ".bin"
needs_claude = pytest.mark.skipif(
    not (BIN / "claude").exists(), reason="claude CLI not installed in .tools (run scripts/setup)"
)
needs_codex = pytest.mark.skipif(
    not (BIN / "codex").exists(), reason="codex CLI not installed in .tools (run scripts/setup)"
)


def claude(server) -> ClaudeCliAgent:
    return ClaudeCliAgent(
        "claude-sonnet-4-6", base_url=server.url, api_key=SECRET_KEY, executable=BIN / "claude"
    )


def codex(server) -> CodexCliAgent:
    return CodexCliAgent(
        "gpt-5", base_url=f"{server.url}/v1", api_key=SECRET_KEY, executable=BIN / "codex"
    )


def assert_key_stayed_outside(server, result) -> None:
    sent = [request.headers.get("x-api-key") or request.headers.get("authorization", "")
            for request in server.model_requests()]  # fmt: skip
    assert sent and all(SECRET_KEY in value for value in sent)
    assert SECRET_KEY not in str(result.transcript)
    assert PLACEHOLDER_KEY in str(result.transcript)  # `env` ran and showed only the stand-in key


@needs_claude
def test_claude_edits_the_workspace_and_reports_usage(server, workspace, make_session):
    kernel = str(workspace / "kernel.py")
    server.queue(
        Reply(calls=[Call("Read", {"file_path": kernel})], input_tokens=1000, output_tokens=50),
        Reply(calls=[Call("Edit", {"file_path": kernel, "old_string": "64", "new_string": "128"})]),
        Reply(calls=[Call("Bash", {"command": "env", "description": "show environment"})]),
        Reply(text="Raised BLOCK to 128."),
    )
    result = claude(server).run(make_session())
    assert result.exit_reason == "finished", result.error
    assert (workspace / "kernel.py").read_text() == "BLOCK = 128\n"
    assert result.usage.input_tokens == 1300 and result.usage.output_tokens == 110
    assert result.usage.calls == 4 and result.usage.dollars > 0
    assert {event["type"] for event in result.transcript} >= {"system", "assistant", "result"}
    assert [event.name for event in result.events if event.category == "tool_call"] == [
        "Read", "Edit", "Bash"
    ]  # fmt: skip
    assert_key_stayed_outside(server, result)


@needs_claude
def test_claude_retries_an_overloaded_api_and_counts_it(server, make_session):
    server.queue(Failure(529), Reply(text="ok"))
    result = claude(server).run(make_session())
    assert result.exit_reason == "finished"
    assert result.usage.failed_calls == 1 and result.usage.calls == 2


@needs_claude
@pytest.mark.parametrize(
    ("limits", "reason"),
    [
        ({"max_turns": 1}, "turn_limit"),
        ({"max_dollars": 1.0}, "dollar_limit"),
        ({"max_tokens": 500}, "token_limit"),
    ],
)
def test_claude_stops_at_each_limit(server, make_session, limits, reason):
    busy = Reply(calls=[Call("Bash", {"command": "ls", "description": "list"})],
                 input_tokens=1_000_000 if "max_dollars" in limits else 400)  # fmt: skip
    server.queue(busy, busy, busy)
    result = claude(server).run(make_session(**limits))
    assert result.exit_reason == reason, result.error


@needs_claude
def test_claude_past_wall_time_is_a_timeout(server, make_session):
    server.queue(Reply(text="late", delay_s=20))
    result = claude(server).run(make_session(wall_s=3))
    assert result.exit_reason == "timeout" and "wall_s=3" in result.error


@needs_codex
def test_codex_runs_a_command_and_reports_usage(server, workspace, make_session):
    server.queue(
        Reply(calls=[Call("exec_command", {"cmd": "sed -i s/64/128/ kernel.py && env"})]),
        Reply(text="Raised BLOCK to 128.", input_tokens=700, output_tokens=30),
    )
    result = codex(server).run(make_session())
    assert result.exit_reason == "finished", result.error
    assert (workspace / "kernel.py").read_text() == "BLOCK = 128\n"
    assert result.usage.input_tokens == 800 and result.usage.output_tokens == 50
    assert result.usage.calls == len(server.model_requests()) == 2  # requests, not tool calls
    assert [event.name for event in result.events if event.category == "tool_call"] == ["bash"]
    assert_key_stayed_outside(server, result)


@needs_codex
def test_codex_counts_a_rate_limited_call(server, make_session):
    server.queue(Failure(429, "rate_limit_exceeded", "slow down"), Reply(text="ok"))
    result = codex(server).run(make_session())
    assert result.exit_reason == "finished" and result.usage.failed_calls == 1


@needs_codex
def test_codex_rejected_key_is_an_error(server, make_session):
    server.default = Failure(401, "invalid_api_key", "bad key")
    result = codex(server).run(make_session())
    assert result.exit_reason == "error" and "401" in result.error
    assert result.usage.failed_calls >= 1


PROJECT_TOOLS = (
    "python -c 'import torch, controller; print(42 * 1000 + 17)' && ruff --version"
    " && pytest --version && controller evaluate --help | head -1"
)


FENCES = ["landlock", pytest.param("docker", marks=pytest.mark.docker)]


@needs_claude
@pytest.mark.parametrize("fence", FENCES)
def test_claude_runs_the_projects_tools_in_the_fence(fence, server, make_session):
    server.queue(
        Reply(calls=[Call("Bash", {"command": PROJECT_TOOLS, "description": "tools"})]),
        Reply(text="The tools answer."),
    )
    session = make_session().model_copy(update={"fence": get_fence(fence)})
    result = claude(server).run(session)
    assert result.exit_reason == "finished", result.error
    output = json.dumps(server.model_requests()[-1].body)
    assert "42017" in output and "ruff 0" in output and "usage: controller evaluate" in output
    assert "bashrc" not in output and "Permission denied" not in output


@needs_codex
@pytest.mark.parametrize("fence", FENCES)
def test_codex_runs_the_projects_tools_in_the_fence(fence, server, make_session):
    server.queue(Reply(calls=[Call("exec_command", {"cmd": PROJECT_TOOLS})]), Reply(text="ok"))
    session = make_session().model_copy(update={"fence": get_fence(fence)})
    result = codex(server).run(session)
    assert result.exit_reason == "finished", result.error
    output = json.dumps(server.model_requests()[-1].body)
    assert "42017" in output and "ruff 0" in output and "usage: controller evaluate" in output
    assert "bashrc" not in output and "Permission denied" not in output


@pytest.mark.parametrize("kind", ["claude", "codex"])
def test_missing_cli_fails_before_running(kind, tmp_path, make_session, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "x")
    monkeypatch.setenv("OPENAI_API_KEY", "x")
    backend = ClaudeCliAgent if kind == "claude" else CodexCliAgent
    agent = backend(executable=tmp_path / "not-installed")
    with pytest.raises(ControllerError, match=f"needs the `{kind}` CLI"):
        agent.check_available()
    with pytest.raises(ControllerError, match="scripts/setup"):
        agent.run(make_session())


@pytest.mark.parametrize("kind", ["claude", "codex"])
def test_missing_key_fails_before_running(kind, monkeypatch, tmp_path):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    stand_in = tmp_path / kind
    stand_in.write_text("#!/bin/sh\nexit 0\n")
    backend = ClaudeCliAgent if kind == "claude" else CodexCliAgent
    with pytest.raises(ControllerError, match="API_KEY"):
        backend(executable=stand_in).check_available()
    assert make_agent(kind).spec == kind


def test_cli_dying_mid_stream_is_an_error_with_its_stderr(tmp_path, make_session, server):
    """A stand-in: emits the start of a real stream-json session, then crashes."""
    stand_in = tmp_path / "claude"
    stand_in.write_text(
        "#!/bin/sh\n"
        'echo \'{"type":"system","subtype":"init","model":"claude-sonnet-4-6","tools":[]}\'\n'
        'echo \'{"type":"assistant","message":{"id":"msg_1","content":[{"type":"text",'
        '"text":"thinking"}],"usage":{"input_tokens":10,"output_tokens":1}}}\'\n'
        "echo 'not json at all'\n"
        "echo 'Segmentation fault' >&2\n"
        "exit 139\n"
    )
    stand_in.chmod(stand_in.stat().st_mode | stat.S_IXUSR)
    agent = ClaudeCliAgent(base_url=server.url, api_key=SECRET_KEY, executable=stand_in)
    result = agent.run(make_session())
    assert result.exit_reason == "error"
    assert "code 139" in result.error and "Segmentation fault" in result.error
    assert result.transcript[-2] == {"type": "unparsed", "line": "not json at all"}
    assert result.transcript[-1] == {"type": "relay", "forwarded": 0, "failed": 0}
    assert result.usage.calls == 1


@needs_claude
def test_claudes_cached_spend_is_priced_as_the_cli_prices_it(make_session):
    """With the server keeping a prompt cache, the controller's estimate from the session's
    tokens (cache reads and writes apart) agrees with the CLI's own dollar figure."""
    from controller.agents.claude_cli_agent import session_tokens
    from controller.agents.pricing import price_for
    from tests.agents.protocol_server import PromptCache, ProtocolServer

    with ProtocolServer(prompt_cache=PromptCache()) as server:
        server.queue(
            *[Reply(calls=[Call("Bash", {"command": "seq 1 50", "description": "n"})])] * 3,
            Reply(text="done"),
        )
        result = claude(server).run(make_session())
    assert result.exit_reason == "finished", result.error
    (final,) = [event for event in result.transcript if event.get("type") == "result"]
    tokens = session_tokens(final)
    assert tokens.cache_read > 0 and result.usage.cache_read_tokens == tokens.cache_read
    estimate = price_for("claude-sonnet-4-6")[0].dollars(*tokens)
    assert estimate == pytest.approx(final["total_cost_usd"], rel=0.05)


@pytest.mark.parametrize("kind", [pytest.param("claude", marks=needs_claude),
                                  pytest.param("codex", marks=needs_codex)])  # fmt: skip
def test_a_cli_session_stops_before_its_token_cap_is_passed(kind, make_session):
    """The server counts the input each request holds; the relay lowers every call's output
    limit to what is left and refuses the call the cap has no room for."""
    from tests.agents.protocol_server import PromptCache, ProtocolServer

    command = (
        Call("Bash", {"command": "true", "description": "t"})
        if kind == "claude"
        else Call("exec_command", {"cmd": "true"})
    )
    with ProtocolServer(prompt_cache=PromptCache()) as server:
        server.default = Reply(calls=[command], output_tokens=20)
        agent = claude(server) if kind == "claude" else codex(server)
        cap = 120_000
        result = agent.run(make_session(max_tokens=cap))
        answered = len(server.model_requests())
    assert result.exit_reason == "token_limit", (result.error, result.usage)
    assert result.usage.total_tokens <= cap and result.usage.calls >= 2, result.usage
    assert answered == result.usage.calls
