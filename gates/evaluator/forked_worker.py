"""The controller's side of the zygote (`zygote.py`): start it once per worker environment,
ask it for workers, and hold each forked worker behind the part of `subprocess.Popen` the
launcher uses (pid, stdin, wait with a timeout, poll).

A zygote that cannot start or has died is `ZygoteUnavailable`: the launcher then starts the
worker as a fresh process, which behaves the same, only slower to start.
"""

import atexit
import contextlib
import json
import logging
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import OrderedDict
from pathlib import Path

from gates.errors import GateError

LOG = logging.getLogger(__name__)
READY_TIMEOUT = 180.0  # the imports, on a loaded machine
REPLY_TIMEOUT = 60.0


class ZygoteUnavailable(Exception):
    """The zygote could not start, has died, or refused to fork."""


class ForkedProcess:
    """A worker forked by the zygote; its exit code arrives on its channel."""

    def __init__(self, channel: socket.socket, held: bool) -> None:
        self._channel = channel
        self._buffer = b""
        self.returncode: int | None = None
        reply = self._read_message(REPLY_TIMEOUT)
        if reply is None or "pid" not in reply:
            channel.close()
            raise ZygoteUnavailable(f"the zygote did not fork the worker: {reply}")
        self.pid: int = reply["pid"]
        self.stdin = _ReleaseLine(channel) if held else None

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.returncode is None:
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                raise subprocess.TimeoutExpired(f"worker {self.pid}", timeout)
            self._read_exit(remaining)
        return self.returncode

    def poll(self) -> int | None:
        if self.returncode is None:
            self._read_exit(0.0)
        return self.returncode

    def _read_exit(self, timeout: float | None) -> None:
        try:
            message = self._read_message(timeout)
        except TimeoutError:
            return
        if message is None:  # the zygote died before reporting: the worker's fate is unknown
            self.returncode = -1
        elif "exit" in message:
            self.returncode = int(message["exit"])
        if self.returncode is not None:
            self._channel.close()

    def _read_message(self, timeout: float | None) -> dict | None:
        """The next JSON line; None at end of stream; TimeoutError when none came in time."""
        while b"\n" not in self._buffer:
            self._channel.settimeout(timeout)
            try:
                chunk = self._channel.recv(4096)
            except (TimeoutError, BlockingIOError):
                raise TimeoutError from None
            except OSError:
                return None
            if not chunk:
                return None
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return json.loads(line)


class _ReleaseLine:
    """The held worker's stdin: the controller writes its release line, then closes."""

    def __init__(self, channel: socket.socket) -> None:
        self._channel = channel

    def write(self, data: bytes) -> None:
        try:
            self._channel.sendall(data)
        except OSError as error:
            raise BrokenPipeError(str(error)) from None

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._channel.shutdown(socket.SHUT_WR)


class ZygoteClient:
    """One started zygote: its process and the control socket only the controller holds."""

    def __init__(self, environment: dict[str, str], cwd: Path) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._lock = threading.Lock()
        self._control = ours
        self._log = tempfile.NamedTemporaryFile(prefix="controller-zygote-", suffix=".log")  # noqa: SIM115
        zygote_environment = {
            **environment,
            "OPENBLAS_NUM_THREADS": "1",  # NumPy's BLAS starts no thread pool in the zygote
            "PYTORCH_NVML_BASED_CUDA_CHECK": "1",  # is_available() asks NVML, not the driver
        }
        with theirs:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "gates.evaluator.zygote", str(theirs.fileno())],
                cwd=cwd,
                env=zygote_environment,
                stdin=subprocess.DEVNULL,
                stdout=self._log,
                stderr=subprocess.STDOUT,
                pass_fds=(theirs.fileno(),),
                start_new_session=True,
            )
        ours.settimeout(READY_TIMEOUT)
        try:
            ready = json.loads(ours.recv(4096) or b"{}")
        except (OSError, ValueError):
            ready = {}
        if not ready.get("ready"):
            self._control.close()
            reason = self._last_log_line()
            self.process.kill()
            self.process.wait()
            self._log.close()
            raise ZygoteUnavailable(f"the zygote did not start: {reason}")
        ours.settimeout(REPLY_TIMEOUT)

    def alive(self) -> bool:
        return self.process.poll() is None

    def fork(self, argv: list[str], environment: dict, cwd: Path, log: Path, held: bool):
        """A forked worker, started like `python -m gates.evaluator.worker ARGV`."""
        request = {"argv": argv, "env": environment, "cwd": str(cwd), "held": held}
        ours, theirs = socket.socketpair()
        with theirs, open(log, "wb") as log_file:
            self._send(request, [theirs.fileno(), log_file.fileno()], ours)
        return ForkedProcess(ours, held)

    def describe(self) -> dict:
        """The zygote's own account of what it holds (threads, CUDA, modules)."""
        ours, theirs = socket.socketpair()
        with theirs:
            self._send({"describe": True}, [theirs.fileno()], ours)
        with ours:
            ours.settimeout(REPLY_TIMEOUT)
            data = b""
            while not data.endswith(b"\n"):
                chunk = ours.recv(1 << 20)
                if not chunk:
                    raise ZygoteUnavailable("the zygote ended before it answered")
                data += chunk
        return json.loads(data)

    def _send(self, request: dict, fds: list[int], channel: socket.socket) -> None:
        try:
            with self._lock:
                socket.send_fds(self._control, [json.dumps(request).encode()], fds)
        except OSError as error:
            channel.close()
            raise ZygoteUnavailable(f"the zygote is gone: {error}") from None

    def close(self) -> None:
        """Close the control socket: the zygote forks no more and ends once the workers it
        forked have ended (the launcher still waits for and kills those)."""
        self._control.close()
        self._log.close()

    def _last_log_line(self) -> str:
        try:
            lines = Path(self._log.name).read_text(errors="replace").strip().splitlines()
        except OSError:
            return ""
        if lines:
            return lines[-1][:300]
        try:
            return f"it exited with code {self.process.wait(5)}"
        except subprocess.TimeoutExpired:
            return f"no answer in {READY_TIMEOUT:g} s"


MOST_ZYGOTES = 2  # each holds torch in memory; an environment seen again starts a new one
_ZYGOTES: OrderedDict[tuple, ZygoteClient] = OrderedDict()
_FAILED: set[tuple] = set()
_ZYGOTES_LOCK = threading.Lock()


def zygote_for(environment: dict[str, str], cwd: Path) -> ZygoteClient:
    """The zygote for this environment and interpreter, started on first use; a dead one
    is replaced, the least recently used one closed past MOST_ZYGOTES, and one that failed
    to start is not tried again in this process."""
    key = (sys.executable, str(cwd), tuple(sorted(environment.items())))
    with _ZYGOTES_LOCK:
        if key in _FAILED:
            raise ZygoteUnavailable("the zygote failed to start earlier in this process")
        client = _ZYGOTES.pop(key, None)
        if client is not None and not client.alive():
            client.close()
            client = None
        if client is None:
            try:
                client = ZygoteClient(environment, cwd)
            except ZygoteUnavailable as error:
                _FAILED.add(key)
                LOG.warning("evaluator workers start as fresh processes: %s", error)
                raise
        _ZYGOTES[key] = client
        while len(_ZYGOTES) > MOST_ZYGOTES:
            _ZYGOTES.popitem(last=False)[1].close()
        return client


@atexit.register
def _close_zygotes() -> None:
    with _ZYGOTES_LOCK:
        for client in _ZYGOTES.values():
            client.close()
        _ZYGOTES.clear()


def start_method() -> str:
    """`zygote` (default) or `spawn` (a fresh interpreter per worker), from
    CONTROLLER_WORKER_START; the Landlock fence always spawns."""
    value = os.environ.get("CONTROLLER_WORKER_START", "zygote")
    if value not in ("zygote", "spawn"):
        raise GateError(f"CONTROLLER_WORKER_START is {value!r}; use 'zygote' or 'spawn'")
    return value
