"""A page opened in headless Chromium through the DevTools protocol over a pipe (plain Python,
no browser driver): what its console and exceptions said, a value the page computes, and a
screenshot, the way a reviewer's browser would load it."""

import base64
import contextlib
import fcntl
import json
import os
import shutil
import subprocess
import time
from pathlib import Path

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "chrome-headless-shell")


def find_browser() -> str | None:
    for name in BROWSERS:
        found = shutil.which(name)
        if found:
            return found
    return None


def _pipe_ends_at_3_and_4(commands: int, replies: int) -> None:
    """In the browser's process, before exec: the pipe ends become fds 3 and 4, inheritable.
    Both are first moved above 9, so neither dup2 copies an fd onto itself (which would keep
    its close-on-exec flag) or onto the other's end. Every other descriptor of this process
    is non-inheritable (PEP 446), so with close_fds=False nothing else reaches the browser."""
    high_commands = fcntl.fcntl(commands, fcntl.F_DUPFD, 10)
    high_replies = fcntl.fcntl(replies, fcntl.F_DUPFD, 10)
    os.dup2(high_commands, 3)
    os.dup2(high_replies, 4)


class PageLoad:
    """One page in a fresh headless browser: load, evaluate, screenshot, close."""

    def __init__(self, browser: str, page: Path, width: int = 1200, height: int = 900) -> None:
        self.messages: list[dict] = []
        self.errors: list[str] = []
        self._next_id = 0
        self._buffer = b""
        commands_read, self._commands = os.pipe()
        self._replies, replies_write = os.pipe()
        self._profile = page.parent / ".browser-profile"
        self._process = subprocess.Popen(
            [
                browser,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--disable-extensions",
                "--remote-debugging-pipe",
                f"--user-data-dir={self._profile}",
                f"--window-size={width},{height}",
                "about:blank",
            ],
            # The browser reads commands on fd 3 and writes replies on fd 4 (pass_fds=(3, 4)
            # failed with EBADF wherever this process had no fds 3 and 4 open of its own).
            close_fds=False,
            preexec_fn=lambda: _pipe_ends_at_3_and_4(commands_read, replies_write),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(commands_read)
        os.close(replies_write)
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)[
            "sessionId"
        ]
        for domain in ("Page", "Runtime", "Log"):
            self.call(f"{domain}.enable", session=self.session)
        started = time.monotonic()
        self.call("Page.navigate", session=self.session, url=page.resolve().as_uri())
        self._wait_for("Page.loadEventFired")
        self.load_seconds = time.monotonic() - started

    def call(self, method: str, session: str | None = None, **params) -> dict:
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        os.write(self._commands, json.dumps(message).encode() + b"\0")
        reply = self._wait_for(None, self._next_id)
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        return reply.get("result", {})

    def evaluate(self, expression: str):
        """The JSON value of `expression` evaluated in the page."""
        result = self.call(
            "Runtime.evaluate", session=self.session, expression=expression, returnByValue=True
        )
        if "exceptionDetails" in result:
            raise RuntimeError(f"page script failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    def screenshot(self, path: Path) -> bytes:
        data = self.call(
            "Page.captureScreenshot",
            session=self.session,
            format="png",
            captureBeyondViewport=True,
        )["data"]
        path.write_bytes(base64.b64decode(data))
        return path.read_bytes()

    def close(self) -> None:
        with contextlib.suppress(RuntimeError, OSError, TimeoutError):
            self.call("Browser.close")
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        os.close(self._commands)
        os.close(self._replies)
        shutil.rmtree(self._profile, ignore_errors=True)

    def _wait_for(self, method: str | None, reply_id: int | None = None, timeout: float = 30.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            message = self._read()
            self._note(message)
            if reply_id is not None and message.get("id") == reply_id:
                return message
            if method is not None and message.get("method") == method:
                return message
        raise TimeoutError(f"no {method or reply_id} from the browser in {timeout} s")

    def _read(self) -> dict:
        while b"\0" not in self._buffer:
            chunk = os.read(self._replies, 1 << 20)
            if not chunk:
                raise RuntimeError("the browser closed its pipe")
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(line)

    def _note(self, message: dict) -> None:
        """Keep every console message; an error, warning or uncaught exception is an error."""
        method, params = message.get("method"), message.get("params", {})
        if method == "Runtime.consoleAPICalled":
            text = " ".join(str(a.get("value", a.get("description"))) for a in params["args"])
            self.messages.append({"level": params["type"], "text": text})
            if params["type"] in ("error", "warning", "assert"):
                self.errors.append(f"console.{params['type']}: {text}")
        elif method == "Runtime.exceptionThrown":
            details = params["exceptionDetails"]
            described = (details.get("exception") or {}).get("description", "")
            self.errors.append(f"exception: {details.get('text')} {described}".strip())
        elif method == "Log.entryAdded":
            entry = params["entry"]
            self.messages.append({"level": entry["level"], "text": entry["text"]})
            if entry["level"] in ("error", "warning"):
                self.errors.append(f"{entry['source']} {entry['level']}: {entry['text']}")
