"""The scripted backend and the spec parser: replay per attempt, clear errors for bad input."""

from __future__ import annotations

import json

import pytest

from controller.agents import Agent, make_agent
from controller.agents.anthropic_agent import AnthropicAgent
from controller.agents.claude_cli_agent import ClaudeCliAgent
from controller.agents.codex_cli_agent import CodexCliAgent
from controller.agents.openai_agent import OpenAIAgent
from controller.agents.scripted_agent import ScriptedAgent
from controller.errors import ControllerError


@pytest.fixture
def script(tmp_path):
    path = tmp_path / "session.json"
    first = [
        {"tool": "write", "path": "fast.py", "content": "def fast():\n    return 1\n"},
        {"tool": "edit", "path": "kernel.py", "old": "64", "new": "128"},
        {"tool": "bash", "command": "python3 -c 'import fast; print(fast.fast())'"},
    ]
    second = [{"tool": "edit", "path": "kernel.py", "old": "64", "new": "256"}]
    path.write_text(json.dumps({"attempts": [first, second]}))
    return path


def test_each_attempt_replays_its_own_actions(script, workspace, make_session):
    agent = make_agent(f"scripted:{script}")
    agent.check_available()
    result = agent.run(make_session(attempt=1))
    assert result.exit_reason == "finished" and result.error is None
    assert (workspace / "kernel.py").read_text() == "BLOCK = 128\n"
    assert result.transcript[-1] == {
        "role": "tool",
        "ok": True,
        "output": "exit code 0\nstdout:\n1\n",
    }
    assert result.usage.calls == 0 and result.usage.dollars == 0.0
    assert [event.category for event in result.events].count("tool_call") == 3

    (workspace / "kernel.py").write_text("BLOCK = 64\n")
    assert agent.run(make_session(attempt=2)).exit_reason == "finished"
    assert (workspace / "kernel.py").read_text() == "BLOCK = 256\n"


def test_a_failing_action_is_recorded_not_raised(tmp_path, workspace, make_session):
    path = tmp_path / "bad_edit.json"
    action = {"tool": "edit", "path": "kernel.py", "old": "nope", "new": "x"}
    path.write_text(json.dumps({"attempts": [[action]]}))
    result = make_agent(f"scripted:{path}").run(make_session())
    assert result.exit_reason == "finished"
    assert result.transcript[-1]["ok"] is False and "not found" in result.transcript[-1]["output"]


def test_an_attempt_beyond_the_script_is_an_error(script, make_session):
    result = make_agent(f"scripted:{script}").run(make_session(attempt=3))
    assert result.exit_reason == "error" and "has 2 attempts" in result.error


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "cannot read"),
        ("{not json", "not valid"),
        ('{"attempts": [[{"tool": "rm", "path": "x"}]]}', "unknown tool 'rm'"),
    ],
)
def test_bad_scripts_fail_before_running(tmp_path, content, message):
    path = tmp_path / "script.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(ControllerError, match=message):
        make_agent(f"scripted:{path}").check_available()


@pytest.mark.parametrize(
    ("spec", "kind"),
    [
        ("anthropic:claude-sonnet-4-6", AnthropicAgent),
        ("openai:gpt-4o", OpenAIAgent),
        ("claude", ClaudeCliAgent),
        ("codex", CodexCliAgent),
        ("scripted:session.json", ScriptedAgent),
    ],
)
def test_specs_name_their_backend(spec, kind):
    agent = make_agent(spec, base_url="http://127.0.0.1:9")
    assert isinstance(agent, kind) and isinstance(agent, Agent)
    assert agent.spec == spec


@pytest.mark.parametrize("spec", ["gemini:pro", "anthropic:", "openai", "scripted:", ""])
def test_unknown_or_incomplete_specs_are_refused(spec):
    with pytest.raises(ControllerError) as refused:
        make_agent(spec)
    assert "\n" not in str(refused.value)
