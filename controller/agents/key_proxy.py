"""A loopback relay that adds the API key outside the fence, so CLI agents never hold it.

The CLI inside the fence is given a placeholder key and this relay's 127.0.0.1 address (the only
TCP port it may reach); the relay swaps in the real key and forwards to the provider, streaming
the answer back as it arrives. DNS and TLS also stay outside the fence. It serves the model
calls and nothing else: a POST to one of the provider's generation paths the backend uses, with
a body of at most `MAX_BODY_BYTES`; anything else is answered 403 (413 for a body too large)
and recorded, and every call forwarded is counted: a run's usage never shows fewer calls than
it made.
"""

from __future__ import annotations

import contextlib
import http.client
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

PLACEHOLDER_KEY = "key-held-by-the-controller"
DROPPED_REQUEST_HEADERS = {"host", "x-api-key", "authorization", "connection", "content-length"}
DROPPED_RESPONSE_HEADERS = {"transfer-encoding", "content-length", "connection", "keep-alive"}
CHUNK_BYTES = 16 * 1024
MAX_BODY_BYTES = 32 << 20
"""The largest request body forwarded (a long conversation with images stays well under)."""
ANTHROPIC_PATHS = frozenset({"/v1/messages", "/v1/messages/count_tokens"})
OPENAI_PATHS = frozenset({"/responses", "/chat/completions"})
"""Relative to an OpenAI-compatible base URL, which carries its own `/v1`."""


class KeyProxy:
    """Forwards 127.0.0.1:<port><path> to <upstream><path> with the key in `key_header`."""

    def __init__(
        self,
        upstream: str,
        key: str,
        key_header: str,
        timeout_s: float = 600,
        allowed_paths: frozenset[str] = ANTHROPIC_PATHS,
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

        def _refuse(self, status: int, message: str) -> None:
            with proxy._lock:
                proxy.refused.append(f"{self.command} {self.path[:200]} ({status})")
            data = message.encode()
            self.send_response(status)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            self.wfile.write(data)

        def _forward(self, length: int) -> None:
            body = self.rfile.read(length) if length else None
            with proxy._lock:
                proxy.forwarded += 1
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
                    proxy.failed += 1
                self._fail(f"the provider could not be reached: {error}")
                return
            if upstream.status >= 400:
                with proxy._lock:
                    proxy.failed += 1
            try:
                self._relay(upstream)
            finally:
                connection.close()

        def _relay(self, upstream: http.client.HTTPResponse) -> None:
            self.send_response(upstream.status, upstream.reason)
            for name, value in upstream.getheaders():
                if name.lower() not in DROPPED_RESPONSE_HEADERS:
                    self.send_header(name, value)
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            with contextlib.suppress(OSError):
                while chunk := upstream.read1(CHUNK_BYTES):
                    self.wfile.write(chunk)
                    self.wfile.flush()

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
    """Raise a session's call counts to what the relay forwarded: a CLI's own stream can miss
    calls (retried, cut off), the relay sees every one that reached the provider."""
    usage.calls = max(usage.calls, proxy.forwarded)
    usage.failed_calls = max(usage.failed_calls, proxy.failed)
