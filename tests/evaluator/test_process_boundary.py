"""The candidate worker's process filter on the CPU: once installed, every way of starting a
process is refused by the kernel (the audited ones and `_posixsubprocess.fork_exec`, which
raises no audit event), while threads and Torch's own thread pool still work."""

import platform
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

ATTEMPTS = textwrap.dedent(
    """
    import os, subprocess, sys, threading
    from gates.evaluator import process_boundary

    process_boundary.install()
    import torch

    a = torch.randn(256, 256)
    assert float((a @ a).abs().sum()) > 0
    ran = []
    worker = threading.Thread(target=lambda: ran.append(True))
    worker.start()
    worker.join()
    print("thread", bool(ran))
    pipe = os.pipe()
    routes = {
        "subprocess": lambda: subprocess.run(["/bin/true"]),
        "fork": os.fork,
        "posix_spawn": lambda: os.posix_spawn("/bin/true", ["true"], {}),
        "fork_exec": lambda: sys.modules["_posixsubprocess"].fork_exec(
            [b"/bin/true"], [b"/bin/true"], True, (), None, None,
            -1, -1, -1, -1, -1, -1, *pipe, False, False, -1, None, None, None, -1, None, False,
        ),
        "execv": lambda: os.execv("/bin/true", ["true"]),
    }
    for name, route in routes.items():
        try:
            if route() == 0:
                os._exit(0)  # a forked child
            print(name, "started")
        except OSError as error:
            print(name, "refused", error.errno)
    """
)


@pytest.mark.skipif(platform.machine() != "x86_64", reason="the filter describes x86_64 only")
def test_no_process_can_be_started_once_the_filter_is_installed():
    result = subprocess.run(
        [sys.executable, "-c", ATTEMPTS], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.split("\n")
    assert "thread True" in lines
    for route in ("subprocess", "fork", "posix_spawn", "fork_exec", "execv"):
        assert f"{route} refused 1" in lines, result.stdout


def test_without_the_filter_the_same_routes_start_processes():
    """The control: the attempts above are real ways to start a process."""
    control = ATTEMPTS.replace("process_boundary.install()", "pass").replace(
        '"execv": lambda: os.execv("/bin/true", ["true"]),', ""
    )
    result = subprocess.run(
        [sys.executable, "-c", control], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    for route in ("fork", "posix_spawn", "fork_exec"):
        assert f"{route} started" in result.stdout.split("\n"), result.stdout
