"""A loopback relay that adds the API key outside the fence, so CLI agents never hold it.

The CLI inside the fence is given a placeholder key and this relay's 127.0.0.1 address (the only
TCP port it may reach); the relay swaps in the real key and forwards to the provider, streaming
the answer back as it arrives. DNS and TLS also stay outside the fence.
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


class KeyProxy:
    """Forwards 127.0.0.1:<port><path> to <upstream><path> with the key in `key_header`."""

    def __init__(self, upstream: str, key: str, key_header: str, timeout_s: float = 600):
        parts = urlsplit(upstream)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"upstream {upstream!r} is not an http(s) URL")
        self.scheme, self.host = parts.scheme, parts.hostname
        self.upstream_port = parts.port or (443 if parts.scheme == "https" else 80)
        self.prefix = parts.path.rstrip("/")
        self.key_value = f"Bearer {key}" if key_header == "authorization" else key
        self.key_header = key_header
        self.timeout_s = timeout_s
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
            self._forward()

        def do_POST(self) -> None:
            self._forward()

        def _forward(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else None
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
                self._fail(f"the provider could not be reached: {error}")
                return
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
