"""A loopback server speaking the Anthropic and OpenAI wire protocols with scripted replies.

Tests queue replies (text, tool calls, failures, malformed bodies); every request is recorded
with its headers so a test can check which credentials reached the server.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import threading
import time
from collections import deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from tests.agents import protocol_formats as formats
from tests.agents.prompt_cache import PromptCache
from tests.agents.protocol_formats import Call, Failure, Malformed, Reply

__all__ = ["Call", "Failure", "Malformed", "PromptCache", "ProtocolServer", "Reply", "Request"]


@dataclass
class Request:
    """One request as the server saw it."""

    method: str
    path: str
    headers: dict[str, str]
    """Header names in lower case."""
    body: dict


class ProtocolServer:
    """Serves /v1/messages, /v1/chat/completions and /v1/responses on 127.0.0.1 in a thread."""

    def __init__(self, default: Reply | None = None, prompt_cache: PromptCache | None = None):
        self.prompt_cache = prompt_cache
        """When set, answers report the input tokens the request holds (four characters each),
        Anthropic's split by what its prompt cache earns."""
        self.models: set[str] | None = None
        """The models GET /v1/models/<id> knows; None: any model."""
        self.key_refused = False
        """When set, GET /v1/models answers 401 as for a wrong key."""
        self.replies: deque = deque()
        self.default = default or Reply(text="Done.")
        self.requests: list[Request] = []
        self.lock = threading.Lock()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return self.httpd.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def queue(self, *replies) -> None:
        """Answer the next model calls with these, in order; then with the default reply."""
        with self.lock:
            self.replies.extend(replies)

    def next_reply(self):
        with self.lock:
            return self.replies.popleft() if self.replies else self.default

    def model_requests(self) -> list[Request]:
        """Requests that asked a model for an answer (not token counts or other side calls)."""
        return [
            request
            for request in self.requests
            if request.path.split("?")[0]
            in {"/v1/messages", "/v1/chat/completions", "/v1/responses", "/responses"}
        ]

    def __enter__(self) -> ProtocolServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _handler_for(server: ProtocolServer):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args) -> None:
            pass

        def do_GET(self) -> None:
            self._record({})
            path = self.path.split("?")[0]
            model = path.removeprefix("/v1/models").strip("/")
            known = server.models is None or model in server.models
            if server.key_refused:
                self._json(401, {"error": {"type": "authentication_error", "message": "bad key"}})
            elif path.startswith("/v1/models") and (not model or known):
                self._json(
                    200,
                    {"id": model, "type": "model", "object": "model"}
                    if model
                    else {"data": [{"id": name} for name in sorted(server.models or [])]},
                )
            else:
                self._json(404, {"error": {"type": "not_found_error", "message": path}})

        def do_HEAD(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw or b"{}")
            except json.JSONDecodeError:
                body = {"_raw": raw.decode("utf-8", "replace")}
            self._record(body)
            path = self.path.split("?")[0]
            if path == "/v1/messages/count_tokens":
                self._json(200, {"input_tokens": 10})
            elif path == "/v1/messages":
                self._answer(body, self._anthropic)
            elif path == "/v1/chat/completions":
                self._answer(body, self._chat)
            elif path in ("/v1/responses", "/responses"):
                self._answer(body, self._responses)
            else:
                self._json(404, {"error": {"type": "not_found_error", "message": path}})

        def _record(self, body: dict) -> None:
            headers = {name.lower(): value for name, value in self.headers.items()}
            request = Request(self.command, self.path, headers, body)
            with server.lock:
                server.requests.append(request)

        def _answer(self, body: dict, render) -> None:
            reply = server.next_reply()
            cap = body.get("max_tokens") or body.get("max_completion_tokens")
            if isinstance(reply, Reply) and isinstance(cap, int):  # an answer stops at its cap
                reply = dataclasses.replace(reply, output_tokens=min(reply.output_tokens, cap))
            if isinstance(reply, Reply) and reply.delay_s:
                time.sleep(reply.delay_s)
            if isinstance(reply, Malformed):
                self._raw(200, "application/json", reply.body.encode())
            elif isinstance(reply, Failure):
                anthropic = self.path.startswith("/v1/messages")
                error = (formats.anthropic_error if anthropic else formats.openai_error)(reply)
                self._json(reply.status, error, retry_after=reply.retry_after)
            else:
                render(body, reply)

        def _anthropic(self, body: dict, reply: Reply) -> None:
            model = body.get("model", "model")
            if server.prompt_cache is not None:
                earned = server.prompt_cache.usage(body)
                reply = dataclasses.replace(
                    reply,
                    input_tokens=earned["input_tokens"],
                    cache_write_tokens=earned["cache_creation_input_tokens"],
                    cache_read_tokens=earned["cache_read_input_tokens"],
                )
            if body.get("stream"):
                self._sse([(name, data) for name, data in formats.anthropic_events(reply, model)])
            else:
                self._json(200, formats.anthropic_message(reply, model))

        def _chat(self, body: dict, reply: Reply) -> None:
            model = body.get("model", "model")
            if server.prompt_cache is not None:  # counted the same way, nothing cached
                sent = json.dumps(body.get("messages")) + json.dumps(body.get("tools"))
                reply = dataclasses.replace(reply, input_tokens=max(1, len(sent) // 4))
            if body.get("stream"):
                chunks = formats.chat_completion_chunks(reply, model)
                self._sse([(None, chunk) for chunk in chunks] + [(None, "[DONE]")])
            else:
                self._json(200, formats.chat_completion(reply, model))

        def _responses(self, body: dict, reply: Reply) -> None:
            from tests.agents.responses_format import response_events

            self._sse(response_events(reply, body.get("model", "model")))

        def _json(self, status: int, payload: dict, retry_after: str = "0") -> None:
            self._raw(status, "application/json", json.dumps(payload).encode(), retry_after)

        def _raw(self, status: int, content_type: str, data: bytes, retry_after: str = "0") -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            if status in (429, 529):
                self.send_header("retry-after", retry_after)
            self.end_headers()
            # The client may have given up first (a turn timeout test).
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                self.wfile.write(data)

        def _sse(self, events: list[tuple[str | None, dict | str]]) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.end_headers()
            for name, data in events:
                text = data if isinstance(data, str) else json.dumps(data)
                prefix = f"event: {name}\n" if name else ""
                self.wfile.write(f"{prefix}data: {text}\n\n".encode())
                self.wfile.flush()
            self.close_connection = True

    return Handler
