"""A loopback relay that adds the API key outside the fence, so CLI agents never hold it.

The CLI inside the fence is given a placeholder key and this relay's 127.0.0.1 address (the only
TCP port it may reach); the relay swaps in the real key and forwards to the provider, streaming
the answer back as it arrives. DNS and TLS also stay outside the fence. It serves the model
calls and nothing else: a POST to one of the provider's generation paths the backend uses, with
a body of at most `MAX_BODY_BYTES`; anything else is answered 403 (413 for a body too large)
and recorded, and every call forwarded is counted: a run's usage never shows fewer calls than
it made. Each answer's reported tokens are read as it passes and, with a `UsageLog`, the running
usage is written to disk after every call; with the session's limits, a call the token or
dollar cap has no room for is refused and every other call's output limit is lowered to what
is left (`relay_caps`).
"""

from __future__ import annotations

import contextlib
import http.client
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

from controller.agents.base import AgentLimits, Usage
from controller.agents.call_allowance import (
    CHARACTERS_PER_TOKEN_BOUND,
    Allowance,
    output_allowance,
)
from controller.agents.pricing import DEFAULT_PRICE, Price
from controller.agents.relay_caps import cap_refusal, capped_body
from controller.agents.relay_usage import reported_usage
from controller.agents.usage_log import UsageLog

PLACEHOLDER_KEY = "key-held-by-the-controller"
DROPPED_REQUEST_HEADERS = {"host", "x-api-key", "authorization", "connection", "content-length"}
DROPPED_RESPONSE_HEADERS = {"transfer-encoding", "content-length", "connection", "keep-alive"}
CHUNK_BYTES = 16 * 1024
MAX_BODY_BYTES = 32 << 20
"""The largest request body forwarded (a long conversation with images stays well under)."""
ANTHROPIC_PATHS = frozenset({"/v1/messages", "/v1/messages/count_tokens"})
OPENAI_PATHS = frozenset({"/responses", "/chat/completions"})
"""Relative to an OpenAI-compatible base URL, which carries its own `/v1`."""
COUNTING_PATHS = frozenset({"/v1/messages/count_tokens"})
"""Forwarded, free, and not a model call."""
NO_CEILING = 1 << 30
"""The relay lowers a CLI's own output limit, never sets a tighter one of its own."""
USAGE_READ_BYTES = 8 << 20
"""How much of one answer is kept to read its usage (an answer's usage comes early or last)."""


class KeyProxy:
    """Forwards 127.0.0.1:<port><path> to <upstream><path> with the key in `key_header`."""

    def __init__(
        self,
        upstream: str,
        key: str,
        key_header: str,
        timeout_s: float = 600,
        allowed_paths: frozenset[str] = ANTHROPIC_PATHS,
        usage_log: UsageLog | None = None,
        price: Price | None = None,
        limits: AgentLimits | None = None,
    ):
        parts = urlsplit(upstream)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"upstream {upstream!r} is not an http(s) URL")
        self.scheme, self.host = parts.scheme, parts.hostname
        self.upstream_port = parts.port or (443 if parts.scheme == "https" else 80)
        self.prefix = parts.path.rstrip("/")
        self.key_value = f"Bearer {key}" if key_header == "authorization" else key
        self.key_header = key_header
        self.timeout_s = timeout_s
        self.allowed_paths = frozenset(allowed_paths)
        self.forwarded = 0  # model calls relayed, answered or not
        self.failed = 0  # of those, answered with an error status or not at all
        self.refused: list[str] = []  # `METHOD path (status)` of each request not relayed
        self.usage = Usage()  # what the answers reported, call by call
        self.usage_log = usage_log
        self.price = price
        self.limits = limits
        self.cap_reached: Allowance | None = None  # the caps refused a call
        self._lock = threading.Lock()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return self.httpd.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def connection(self) -> http.client.HTTPConnection:
        """A fresh connection to the provider (TLS verified with the system's CA store)."""
        if self.scheme == "https":
            return http.client.HTTPSConnection(
                self.host, self.upstream_port, timeout=self.timeout_s
            )
        return http.client.HTTPConnection(self.host, self.upstream_port, timeout=self.timeout_s)

    def allowance(self, body_bytes: int) -> Allowance:
        """What the session's caps leave the next call (its input bounded by its size)."""
        bound = body_bytes // CHARACTERS_PER_TOKEN_BOUND + 1
        with self._lock:
            return output_allowance(
                self.limits, self.usage, self.price or DEFAULT_PRICE, bound, NO_CEILING
            )

    def account(self, model_call: bool, answer: bytes) -> None:
        """Add one answer's reported tokens and log the running usage (model calls only)."""
        if not model_call:
            return
        tokens = reported_usage(answer)
        with self._lock:
            self.usage.calls = self.forwarded
            self.usage.failed_calls = self.failed
            self.usage.input_tokens += tokens.input
            self.usage.output_tokens += tokens.output
            self.usage.cache_write_tokens += tokens.cache_write
            self.usage.cache_read_tokens += tokens.cache_read
            if self.price is not None:
                self.usage.dollars += self.price.dollars(*tokens)
            if self.usage_log is not None:
                self.usage_log.record(self.usage)

    def __enter__(self) -> KeyProxy:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _handler_for(proxy: KeyProxy):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args) -> None:
            pass

        def do_GET(self) -> None:
            self._refuse(403, "the relay forwards the model calls only")

        def do_PUT(self) -> None:
            self._refuse(403, "the relay forwards the model calls only")

        def do_DELETE(self) -> None:
            self._refuse(403, "the relay forwards the model calls only")

        def do_POST(self) -> None:
            path = self.path.split("?", 1)[0]
            if path not in proxy.allowed_paths:
                self._refuse(403, f"the relay forwards the model calls only, not {path}")
                return
            try:
                length = int(self.headers.get("Content-Length") or 0)
            except ValueError:
                length = -1
            if not 0 <= length <= MAX_BODY_BYTES:
                self._refuse(413, f"a request body of at most {MAX_BODY_BYTES} bytes")
                return
            self._forward(length)

        def _refuse(self, status: int, message: str, body: bytes | None = None) -> None:
            with proxy._lock:
                proxy.refused.append(f"{self.command} {self.path[:200]} ({status})")
            data = body or message.encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json" if body else "text/plain")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            self.wfile.write(data)

        def _forward(self, length: int) -> None:
            body = self.rfile.read(length) if length else None
            path = self.path.split("?", 1)[0]
            model_call = path not in COUNTING_PATHS
            if model_call and proxy.limits is not None:
                allowance = proxy.allowance(len(body or b""))
                if allowance.stop:
                    proxy.cap_reached = allowance
                    self._refuse(400, allowance.message or "", cap_refusal(path, allowance.message))
                    return
                if allowance.max_output_tokens is not None:
                    body = capped_body(body or b"{}", path, allowance.max_output_tokens)
            with proxy._lock:
                proxy.forwarded += model_call
            headers = {
                name: value
                for name, value in self.headers.items()
                if name.lower() not in DROPPED_REQUEST_HEADERS
            }
            headers[proxy.key_header] = proxy.key_value
            connection = proxy.connection()
            try:
                connection.request(self.command, proxy.prefix + self.path, body, headers)
                upstream = connection.getresponse()
            except OSError as error:
                with proxy._lock:
                    proxy.failed += model_call
                proxy.account(model_call, b"")
                self._fail(f"the provider could not be reached: {error}")
                return
            if upstream.status >= 400:
                with proxy._lock:
                    proxy.failed += model_call
            answer = b""
            try:
                answer = self._relay(upstream)
            finally:
                connection.close()
                proxy.account(model_call, answer)

        def _relay(self, upstream: http.client.HTTPResponse) -> bytes:
            """Stream the answer back; return what was kept of it for reading its usage."""
            self.send_response(upstream.status, upstream.reason)
            for name, value in upstream.getheaders():
                if name.lower() not in DROPPED_RESPONSE_HEADERS:
                    self.send_header(name, value)
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            kept = bytearray()
            with contextlib.suppress(OSError):
                while chunk := upstream.read1(CHUNK_BYTES):
                    if len(kept) < USAGE_READ_BYTES:
                        kept += chunk
                    self.wfile.write(chunk)
                    self.wfile.flush()
            return bytes(kept)

        def _fail(self, message: str) -> None:
            data = message.encode()
            self.send_response(502)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler


def relay_record(proxy: KeyProxy) -> list[dict]:
    """The relay's account for a transcript: the calls it forwarded and what it refused."""
    record = {"type": "relay", "forwarded": proxy.forwarded, "failed": proxy.failed}
    if proxy.refused:
        record["refused"] = list(proxy.refused)
    return [record]


def relay_counts(usage, proxy: KeyProxy) -> None:
    """A CLI session's calls are the requests the relay forwarded (a CLI's own stream can miss
    calls, retried or cut off, or count tool calls as turns); its tokens and dollars never fall
    below what the answers reported."""
    if proxy.forwarded:
        usage.calls = proxy.forwarded
        usage.failed_calls = proxy.failed
    for field in ("input_tokens", "output_tokens", "cache_write_tokens", "cache_read_tokens"):
        setattr(usage, field, max(getattr(usage, field), getattr(proxy.usage, field)))
    usage.dollars = max(usage.dollars, proxy.usage.dollars)
