"""Run a child with captured output, a wall-clock limit and a group kill that cannot hang."""

import contextlib
import os
import selectors
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

TIMEOUT_EXIT_CODE = 124
OUTPUT_LIMIT_BYTES = 16 << 20
DRAIN_GRACE_S = 2.0


@dataclass(frozen=True)
class CapturedRun:
    """What the child did: exit code (128+signal when killed), output, whether time ran out."""

    returncode: int
    stdout: str
    stderr: str
    timed_out: bool
    seconds: float


def kill_process_group(process: subprocess.Popen) -> None:
    """SIGKILL the child's whole process group (it was started as a session leader)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


def run_captured(
    argv: list[str],
    *,
    env: dict[str, str],
    stdin: str | None,
    cwd: Path,
    timeout_s: float,
    pass_fds: tuple[int, ...] = (),
    after_exit: Callable[[subprocess.Popen], None] = kill_process_group,
) -> CapturedRun:
    """Start argv in a new session; kill its group on timeout; stop reading once it is gone."""
    started = time.monotonic()
    process = subprocess.Popen(
        argv,
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=cwd,
        pass_fds=pass_fds,
        start_new_session=True,
    )
    deadline = started + timeout_s
    timed_out = False
    out_fd, err_fd = process.stdout.fileno(), process.stderr.fileno()
    stdin_fd = process.stdin.fileno() if stdin is not None else None
    outputs = {out_fd: bytearray(), err_fd: bytearray()}
    selector = selectors.DefaultSelector()
    for descriptor in (out_fd, err_fd):
        os.set_blocking(descriptor, False)
        selector.register(descriptor, selectors.EVENT_READ)
    pending_input = memoryview((stdin or "").encode())
    if stdin_fd is not None:
        os.set_blocking(stdin_fd, False)
        selector.register(stdin_fd, selectors.EVENT_WRITE)
    drain_until = None
    try:
        while selector.get_map():
            now = time.monotonic()
            if not timed_out and now >= deadline:
                timed_out = True
                kill_process_group(process)
                drain_until = now + DRAIN_GRACE_S
            if drain_until is None and process.poll() is not None:
                after_exit(process)
                drain_until = now + DRAIN_GRACE_S
            if drain_until is not None and now >= drain_until:
                break
            limit = drain_until if drain_until is not None else min(deadline, now + 0.05)
            for key, _ in selector.select(timeout=max(0.0, min(limit - now, 0.05))):
                descriptor = key.fd
                if descriptor == stdin_fd:
                    pending_input = _write_some(selector, process, pending_input)
                    continue
                try:
                    chunk = os.read(descriptor, 65536)
                except BlockingIOError:
                    continue
                if not chunk:
                    selector.unregister(descriptor)
                    continue
                buffer = outputs[descriptor]
                if len(buffer) < OUTPUT_LIMIT_BYTES:
                    buffer += chunk[: OUTPUT_LIMIT_BYTES - len(buffer)]
    finally:
        selector.close()
        if process.poll() is None:
            kill_process_group(process)
        process.wait()
        for stream in (process.stdin, process.stdout, process.stderr):
            if stream is not None:
                stream.close()
    code = process.returncode
    returncode = TIMEOUT_EXIT_CODE if timed_out else (128 - code if code < 0 else code)
    return CapturedRun(
        returncode=returncode,
        stdout=_decode(outputs[out_fd]),
        stderr=_decode(outputs[err_fd]),
        timed_out=timed_out,
        seconds=time.monotonic() - started,
    )


def _write_some(selector, process: subprocess.Popen, pending: memoryview) -> memoryview:
    descriptor = process.stdin.fileno()
    try:
        written = os.write(descriptor, pending[:65536]) if pending else 0
    except (BrokenPipeError, BlockingIOError) as error:
        written = 0 if isinstance(error, BlockingIOError) else len(pending)
    pending = pending[written:]
    if not pending:
        selector.unregister(descriptor)
        process.stdin.close()
    return pending


def _decode(data: bytearray) -> str:
    text = data.decode("utf-8", errors="replace")
    if len(data) >= OUTPUT_LIMIT_BYTES:
        text += "\n[output truncated by the fence]\n"
    return text
