"""The key proxy: swaps the placeholder for the real key and relays JSON and streams unchanged."""

from __future__ import annotations

import socket

import anthropic
import openai
import pytest

from controller.agents.key_proxy import MAX_BODY_BYTES, OPENAI_PATHS, PLACEHOLDER_KEY, KeyProxy
from tests.agents.conftest import SECRET_KEY
from tests.agents.protocol_server import Failure, Reply


def test_anthropic_json_and_stream_pass_with_the_real_key(server):
    server.queue(Reply(text="plain"), Reply(text="streamed", output_tokens=7))
    with KeyProxy(server.url, SECRET_KEY, "x-api-key") as proxy:
        client = anthropic.Anthropic(api_key=PLACEHOLDER_KEY, base_url=proxy.url, max_retries=0)
        message = {"role": "user", "content": "hi"}
        plain = client.messages.create(model="m", max_tokens=10, messages=[message])
        with client.messages.stream(model="m", max_tokens=10, messages=[message]) as stream:
            final = stream.get_final_message()
    assert plain.content[0].text == "plain"
    assert final.content[0].text == "streamed" and final.usage.output_tokens == 7
    keys = [request.headers["x-api-key"] for request in server.model_requests()]
    assert keys == [SECRET_KEY, SECRET_KEY]


def test_openai_path_prefix_and_bearer_key(server):
    server.queue(Reply(text="ok"))
    with KeyProxy(f"{server.url}/v1", SECRET_KEY, "authorization", 600, OPENAI_PATHS) as proxy:
        client = openai.OpenAI(api_key=PLACEHOLDER_KEY, base_url=proxy.url, max_retries=0)
        reply = client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "x"}]
        )
    assert reply.choices[0].message.content == "ok"
    request = server.model_requests()[0]
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == f"Bearer {SECRET_KEY}"


def test_provider_errors_are_relayed_with_their_status(server):
    server.queue(Failure(529))
    with KeyProxy(server.url, SECRET_KEY, "x-api-key") as proxy:
        client = anthropic.Anthropic(api_key=PLACEHOLDER_KEY, base_url=proxy.url, max_retries=0)
        with pytest.raises(anthropic.APIStatusError) as failed:
            client.messages.create(
                model="m", max_tokens=10, messages=[{"role": "user", "content": "x"}]
            )
    assert failed.value.status_code == 529


def test_unreachable_provider_is_a_502():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    with KeyProxy(f"http://127.0.0.1:{closed_port}", SECRET_KEY, "x-api-key") as proxy:
        client = anthropic.Anthropic(api_key=PLACEHOLDER_KEY, base_url=proxy.url, max_retries=0)
        with pytest.raises(anthropic.APIStatusError) as failed:
            client.messages.create(
                model="m", max_tokens=10, messages=[{"role": "user", "content": "x"}]
            )
    assert failed.value.status_code == 502


def test_only_http_upstreams_are_accepted():
    with pytest.raises(ValueError, match="not an http"):
        KeyProxy("file:///etc/passwd", SECRET_KEY, "x-api-key")


def test_the_relay_forwards_the_model_calls_and_refuses_anything_else(server):
    """A model list, another path or method gets 403 and never reaches the provider with the
    key; a body past the limit gets 413; every forwarded call is counted."""
    import http.client

    server.queue(Reply(text="ok"))
    with KeyProxy(server.url, SECRET_KEY, "x-api-key") as proxy:
        client = anthropic.Anthropic(api_key=PLACEHOLDER_KEY, base_url=proxy.url, max_retries=0)
        client.messages.create(model="m", max_tokens=5, messages=[{"role": "user", "content": "x"}])
        answers = []
        for method, path, headers in (
            ("GET", "/v1/models", {}),
            ("POST", "/v1/files", {}),
            ("DELETE", "/v1/messages", {}),
            ("POST", "/v1/messages", {"Content-Length": str(MAX_BODY_BYTES + 1)}),
        ):
            connection = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=10)
            connection.putrequest(method, path)
            for name, value in headers.items():
                connection.putheader(name, value)
            connection.endheaders()
            answers.append(connection.getresponse().status)
            connection.close()
        forwarded, refused = proxy.forwarded, list(proxy.refused)
    assert answers == [403, 403, 403, 413]
    assert forwarded == 1 and len(server.model_requests()) == 1
    assert refused[0] == "GET /v1/models (403)" and refused[-1] == "POST /v1/messages (413)"
    assert all(request.path.split("?")[0] == "/v1/messages" for request in server.requests)


def test_the_relay_logs_each_answers_usage_before_the_next_call(server, tmp_path):
    """Whole and streamed Anthropic answers, an OpenAI Responses stream and a chat completion:
    each call's reported tokens reach the log on disk as the call ends; a count_tokens request
    is forwarded but is not a model call; a refused call is counted as failed."""
    from controller.agents.pricing import price_for
    from controller.agents.usage_log import UsageLog, last_usage

    log = tmp_path / "usage.jsonl"
    server.queue(
        Reply(text="plain", input_tokens=100, output_tokens=5),
        Reply(text="streamed", input_tokens=300, output_tokens=7),
        Failure(500, "api_error", "broken"),
    )
    price = price_for("claude-sonnet-4-6")[0]
    with KeyProxy(server.url, SECRET_KEY, "x-api-key", usage_log=UsageLog(log), price=price) as p:
        client = anthropic.Anthropic(api_key=PLACEHOLDER_KEY, base_url=p.url, max_retries=0)
        message = {"role": "user", "content": "hi"}
        client.messages.create(model="m", max_tokens=10, messages=[message])
        assert last_usage(log)["input_tokens"] == 100  # on disk before the next call
        with client.messages.stream(model="m", max_tokens=10, messages=[message]) as stream:
            stream.get_final_message()
        with pytest.raises(anthropic.InternalServerError):
            client.messages.create(model="m", max_tokens=10, messages=[message])
    logged = last_usage(log)
    assert logged["calls"] == 3 and logged["failed_calls"] == 1
    assert logged["input_tokens"] == 400 and logged["output_tokens"] == 12
    assert logged["dollars"] == pytest.approx(price.dollars(400, 12))


def test_usage_is_read_from_every_answer_shape():
    from controller.agents.relay_usage import reported_usage

    anthropic_stream = (
        b'event: message_start\ndata: {"type": "message_start", "message": {"usage": '
        b'{"input_tokens": 10, "cache_read_input_tokens": 90, "output_tokens": 1}}}\n\n'
        b'event: message_delta\ndata: {"type": "message_delta", "usage": {"output_tokens": 42}}\n\n'
    )
    responses_stream = (
        b'data: {"type": "response.created", "response": {"usage": null}}\n\n'
        b'data: {"type": "response.completed", "response": {"usage": '
        b'{"input_tokens": 700, "output_tokens": 30}}}\n\n'
    )
    chat = b'{"choices": [], "usage": {"prompt_tokens": 55, "completion_tokens": 6}}'
    cached_responses = (
        b'data: {"type": "response.completed", "response": {"usage": {"input_tokens": 900, '
        b'"input_tokens_details": {"cached_tokens": 800}, "output_tokens": 9}}}\n\n'
    )
    assert reported_usage(anthropic_stream) == (100, 42, 0, 90)
    assert reported_usage(responses_stream) == (700, 30, 0, 0)
    assert reported_usage(cached_responses) == (900, 9, 0, 800)
    assert reported_usage(chat) == (55, 6, 0, 0)
    assert reported_usage(b"not json at all") == (0, 0, 0, 0)
