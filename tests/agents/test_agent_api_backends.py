"""The Anthropic and OpenAI backends, through the real SDKs, against the loopback server."""

from __future__ import annotations

import socket

import pytest

from controller.agents import make_agent
from controller.agents.anthropic_agent import AnthropicAgent
from controller.agents.chat_loop import RetryPolicy
from controller.agents.openai_agent import OpenAIAgent
from controller.errors import ControllerError, ProviderUnavailable
from tests.agents.conftest import SECRET_KEY
from tests.agents.protocol_server import Call, Failure, Malformed, Reply

FAST_RETRY = RetryPolicy(attempts=3, base_s=0.01, max_s=0.02)
BACKENDS = ["anthropic", "openai"]


def build(kind: str, server, model: str = "claude-sonnet-4-6", **kwargs):
    if kind == "anthropic":
        return AnthropicAgent(model, base_url=server.url, api_key=SECRET_KEY, **kwargs)
    return OpenAIAgent(model, base_url=f"{server.url}/v1", api_key=SECRET_KEY, **kwargs)


def edit_call(old="64", new="128") -> Call:
    return Call("edit", {"path": "kernel.py", "old": old, "new": new})


@pytest.mark.parametrize("kind", BACKENDS)
def test_tool_use_round_trip_edits_the_workspace(
    kind, server, workspace, make_session, monkeypatch
):
    key_variable = "ANTHROPIC_API_KEY" if kind == "anthropic" else "OPENAI_API_KEY"
    monkeypatch.setenv(key_variable, SECRET_KEY)
    base_url = server.url if kind == "anthropic" else f"{server.url}/v1"
    agent = make_agent(f"{kind}:claude-sonnet-4-6", base_url=base_url)
    server.queue(
        Reply(text="Reading first.", calls=[Call("read", {"path": "kernel.py"})]),
        Reply(calls=[edit_call(), Call("write", {"path": "notes/why.txt", "content": "wider\n"})]),
        Reply(calls=[Call("bash", {"command": "cat kernel.py"}), Call("list", {})]),
        Reply(text="Raised BLOCK to 128.", input_tokens=300, output_tokens=50),
    )
    result = agent.run(make_session())
    assert result.exit_reason == "finished", result.error
    assert (workspace / "kernel.py").read_text() == "BLOCK = 128\n"
    assert (workspace / "notes" / "why.txt").read_text() == "wider\n"
    assert result.usage.calls == 4 and result.usage.failed_calls == 0
    assert result.usage.input_tokens == 600 and result.usage.output_tokens == 110
    assert result.usage.dollars == pytest.approx((600 * 3 + 110 * 15) / 1e6)
    text = str(result.transcript)
    assert "BLOCK = 64" in text and "BLOCK = 128" in text and "notes/" in text
    categories = [event.category for event in result.events]
    assert categories.count("agent_turn") == 4 and categories.count("tool_call") == 5
    assert len(server.model_requests()) == 4


@pytest.mark.parametrize("kind", BACKENDS)
def test_transient_529_and_429_are_retried_and_counted(kind, server, make_session):
    server.queue(
        Failure(529),
        Failure(429, "rate_limit_error", "Too many requests"),
        Reply(text="ok"),
    )
    result = build(kind, server, retry=FAST_RETRY).run(make_session())
    assert result.exit_reason == "finished"
    assert result.usage.calls == 3 and result.usage.failed_calls == 2


@pytest.mark.parametrize("kind", BACKENDS)
def test_rate_limits_are_waited_out_without_spending_retries(kind, server, make_session):
    server.queue(*[Failure(529)] * 4, Failure(429, "rate_limit_error", "slow down"), Reply())
    result = build(kind, server, retry=FAST_RETRY).run(make_session())
    assert result.exit_reason == "finished"  # five refusals, three retries allowed
    assert result.usage.calls == 6 and result.usage.failed_calls == 5


@pytest.mark.parametrize("kind", BACKENDS)
def test_a_sustained_rate_limit_interrupts_the_run_past_the_pause_bound(kind, server, make_session):
    server.queue(*[Failure(529)] * 3)
    bounded = FAST_RETRY.model_copy(update={"max_pause_s": 0.025})
    with pytest.raises(ProviderUnavailable, match="rate limits") as stopped:
        build(kind, server, retry=bounded).run(make_session())
    assert stopped.value.usage["calls"] == 3 and stopped.value.usage["failed_calls"] == 3


@pytest.mark.parametrize("kind", BACKENDS)
def test_persistent_server_errors_stop_with_error(kind, server, make_session):
    server.queue(*[Failure(500, "api_error", "Internal")] * 3)
    result = build(kind, server, retry=FAST_RETRY).run(make_session())
    assert result.exit_reason == "error"
    assert "3 times" in result.error and "500" in result.error
    assert result.usage.failed_calls == 3


@pytest.mark.parametrize("kind", BACKENDS)
def test_malformed_reply_is_counted_then_retried(kind, server, make_session):
    server.queue(Malformed(), Reply(text="fine now"))
    result = build(kind, server, retry=FAST_RETRY).run(make_session())
    assert result.exit_reason == "finished"
    assert result.usage.failed_calls == 1 and result.usage.calls == 2


@pytest.mark.parametrize("kind", BACKENDS)
def test_only_malformed_replies_end_in_error(kind, server, make_session):
    server.queue(Malformed(), Malformed(), Malformed())
    result = build(kind, server, retry=FAST_RETRY).run(make_session())
    assert result.exit_reason == "error" and "Malformed" in result.error
    assert result.usage.failed_calls == 3


def test_unparseable_tool_arguments_are_counted_and_reported(server, workspace, make_session):
    server.queue(Reply(calls=[Call("edit", raw_arguments='{"path": "kernel.py", "old": ')]))
    result = build("openai", server, retry=FAST_RETRY).run(make_session())
    assert result.exit_reason == "finished"
    assert result.usage.failed_calls == 1
    assert "not valid JSON" in str(result.transcript)
    assert (workspace / "kernel.py").read_text() == "BLOCK = 64\n"


def _counting_server():
    from tests.agents.protocol_server import PromptCache, ProtocolServer

    server = ProtocolServer(prompt_cache=PromptCache())
    server.default = Reply(calls=[Call("list", {})], output_tokens=20)
    return server


def _output_caps(server) -> list[int]:
    return [
        request.body.get("max_tokens") or request.body.get("max_completion_tokens")
        for request in server.model_requests()
    ]


@pytest.mark.parametrize("kind", BACKENDS)
def test_a_token_cap_stops_the_session_before_it_is_passed(kind, make_session):
    """The server counts the input the requests really hold: the session stops before a call
    that could pass the cap, and each call asks for no more output than is left."""
    with _counting_server() as server:
        result = build(kind, server).run(make_session(max_tokens=4000))
        caps = _output_caps(server)
    assert result.exit_reason == "token_limit" and "no room" in result.error
    assert result.usage.calls >= 2 and result.usage.total_tokens <= 4000
    assert all(cap < 4000 for cap in caps) and caps == sorted(caps, reverse=True)


@pytest.mark.parametrize("kind", BACKENDS)
def test_a_dollar_cap_stops_the_session_before_it_is_passed(kind, make_session):
    with _counting_server() as server:
        agent = build(kind, server, model="claude-opus-4")
        result = agent.run(make_session(max_dollars=0.06))
    assert result.exit_reason == "dollar_limit" and "no room" in result.error
    assert result.usage.calls >= 2 and result.usage.dollars <= 0.06


def test_an_answer_asking_for_more_than_is_left_is_capped(server, make_session):
    """A long answer cannot overshoot: the call's max_tokens is what the cap leaves."""
    server.queue(Reply(calls=[Call("list", {})], input_tokens=10, output_tokens=50_000))
    result = build("anthropic", server).run(make_session(max_tokens=5_000))
    assert result.usage.total_tokens <= 5_000
    assert 4_000 < result.usage.output_tokens < 5_000


@pytest.mark.parametrize("kind", BACKENDS)
def test_turn_limit_stops_the_session(kind, server, make_session):
    server.default = Reply(calls=[Call("list", {})])
    result = build(kind, server).run(make_session(max_turns=3))
    assert result.exit_reason == "turn_limit" and result.usage.calls == 3


@pytest.mark.parametrize("kind", BACKENDS)
def test_turn_timeout_stops_the_session(kind, server, make_session):
    server.queue(Reply(text="too late", delay_s=3.0))
    result = build(kind, server, retry=FAST_RETRY).run(make_session(turn_timeout_s=0.5))
    assert result.exit_reason == "timeout" and "timed out" in result.error
    assert result.usage.failed_calls == 1


@pytest.mark.parametrize("kind", BACKENDS)
def test_a_rejected_key_stops_the_run_naming_the_variable(kind, server, make_session):
    server.queue(Failure(401, "authentication_error", "invalid x-api-key"))
    variable = "ANTHROPIC_API_KEY" if kind == "anthropic" else "OPENAI_API_KEY"
    with pytest.raises(ProviderUnavailable, match=f"{variable} was refused") as stopped:
        build(kind, server, retry=FAST_RETRY).run(make_session())
    assert "401" in str(stopped.value) and len(str(stopped.value).splitlines()) == 1
    assert stopped.value.usage["calls"] == 1


@pytest.mark.parametrize("kind", BACKENDS)
def test_api_key_reaches_the_server_but_not_the_fence(kind, server, make_session, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY" if kind == "anthropic" else "OPENAI_API_KEY", "x")
    server.queue(Reply(calls=[Call("bash", {"command": "env; cat /proc/self/environ"})]))
    result = build(kind, server).run(make_session())
    assert result.exit_reason == "finished"
    headers = server.model_requests()[0].headers
    sent = headers.get("x-api-key") or headers.get("authorization", "")
    assert SECRET_KEY in sent
    tool_output = str(result.transcript[3:])
    assert "PATH=" in tool_output  # the command did run and print its environment
    assert SECRET_KEY not in tool_output and "API_KEY" not in tool_output


@pytest.mark.parametrize("kind", BACKENDS)
def test_missing_key_fails_before_running(kind, server, make_session, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    agent = make_agent(f"{kind}:some-model", base_url=server.url)
    with pytest.raises(ControllerError, match="API_KEY"):
        agent.check_available()
    with pytest.raises(ControllerError, match="API_KEY"):
        agent.run(make_session())
    assert server.requests == []


def test_unknown_model_is_priced_at_the_default_and_says_so(server, make_session):
    server.queue(Reply(text="ok", input_tokens=1_000_000, output_tokens=0))
    result = build("openai", server, model="mystery-model").run(make_session())
    assert result.usage.dollars == pytest.approx(15.0)
    assert "not in the price table" in result.events[0].args["price_note"]


def test_the_wait_a_provider_asks_for_is_read_from_its_headers():
    from controller.agents.api_agent import retry_after_s

    assert retry_after_s({"retry-after-ms": "1500"}) == 1.5
    assert retry_after_s({"retry-after": "7"}) == 7.0
    assert retry_after_s({"retry-after": "Thu, 01 Jan 1970 00:00:00 GMT"}) == 0.0
    assert retry_after_s({"retry-after": "soon"}) is None
    assert retry_after_s({}) is None


def _ten_turn_session(make_session, caching: bool):
    """A 10-turn session (nine tool turns, then an answer) against a server that keeps a
    prompt cache; returns the session's usage."""
    from controller.agents.anthropic_agent import AnthropicProvider
    from tests.agents.protocol_server import PromptCache, ProtocolServer

    class Agent(AnthropicAgent):
        def provider(self):
            provider = super().provider()
            return AnthropicProvider(provider.client, provider.model, caching=caching)

    with ProtocolServer(prompt_cache=PromptCache()) as server:
        server.queue(*[Reply(calls=[Call("bash", {"command": "seq 1 150"})])] * 9, Reply())
        agent = Agent("claude-sonnet-4-6", base_url=server.url, api_key=SECRET_KEY)
        result = agent.run(make_session(prompt="Tune the kernel. " * 400))
        marked = [r for r in server.model_requests() if "cache_control" in str(r.body)]
    assert result.exit_reason == "finished" and result.usage.calls == 10
    assert bool(marked) == caching
    return result.usage


def test_prompt_caching_bills_a_ten_turn_session_at_most_40_percent_of_its_input(make_session):
    """The stable prefix (tools, system, task, earlier turns) is read from the cache each turn;
    the billed input, by the published cache prices, falls to at most 40% of the uncached."""
    from controller.agents.pricing import price_for

    price = price_for("claude-sonnet-4-6")[0]
    cached = _ten_turn_session(make_session, caching=True)
    uncached = _ten_turn_session(make_session, caching=False)

    def billed_input(usage) -> float:
        return price.dollars(
            usage.input_tokens, 0, usage.cache_write_tokens, usage.cache_read_tokens
        )

    assert uncached.cache_read_tokens == uncached.cache_write_tokens == 0
    assert cached.cache_read_tokens > 0 and cached.cache_write_tokens > 0
    assert cached.input_tokens == uncached.input_tokens  # the same tokens, billed differently
    assert billed_input(cached) <= 0.4 * billed_input(uncached), (cached, uncached)
    assert cached.dollars < uncached.dollars


@pytest.mark.parametrize("kind", BACKENDS)
def test_a_run_with_a_bad_url_key_or_model_stops_in_one_line_before_it_starts(
    kind, server, tmp_path, monkeypatch, capsys
):
    """`controller tune run` refuses with exit 2 and one line, creating no run, when the base
    URL does not answer, the key is refused or the model is not offered."""
    from controller.cli import main

    variable = "ANTHROPIC_API_KEY" if kind == "anthropic" else "OPENAI_API_KEY"
    monkeypatch.setenv(variable, "test-key")
    server.models = {"claude-sonnet-4-6"}
    base = server.url if kind == "anthropic" else f"{server.url}/v1"
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    dead = f"http://127.0.0.1:{closed.getsockname()[1]}"
    closed.close()
    cases = [
        ("unknown", "no-such-model", base, "does not offer model 'no-such-model'"),
        ("unreachable", "claude-sonnet-4-6", dead, "cannot reach"),
        ("refused", "claude-sonnet-4-6", base, f"refused {variable}"),
    ]
    for name, model, url, expected in cases:
        server.key_refused = name == "refused"
        runs = tmp_path / name
        argv = ["tune", "run", "--operator", "rms_norm", "--agent", f"{kind}:{model}"]
        argv += ["--base-url", url, "--fence", "landlock", "--device", "cpu"]
        assert main([*argv, "--runs-dir", str(runs)]) == 2, name
        error = capsys.readouterr().err.strip().splitlines()
        assert len(error) == 1 and expected in error[0], (name, error)
        assert not runs.exists() or not any(runs.iterdir()), name
    assert not server.model_requests()  # no session started
