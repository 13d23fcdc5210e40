"""The candidate worker's process filter on the CPU: once installed, every way of starting a
process is refused by the kernel (the audited ones and `_posixsubprocess.fork_exec`, which
raises no audit event), and so is every way of making memory executable that no file backs,
while threads, Torch's own thread pool, file-backed libraries and ctypes callbacks still work."""

import platform
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
x86_only = pytest.mark.skipif(
    platform.machine() != "x86_64", reason="the filter describes x86_64 only"
)


def _run_script(script: str) -> subprocess.CompletedProcess:
    """Run `script` in a fresh interpreter from the repository root; it must exit 0."""
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    return result


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

# Ways to get executable memory no file backs: an anonymous mapping made executable at once,
# or later through mprotect, or a System V segment attached executable.
EXECUTABLE_MEMORY = textwrap.dedent(
    """
    import ctypes, mmap
    from gates.evaluator import process_boundary

    process_boundary.install()
    import _ctypes, json, numpy  # a library loaded from its file after the filter still loads
    callback = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int)(lambda x: x + 1)
    print("callback", callback(1))
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, *[ctypes.c_int] * 3, ctypes.c_long]
    libc.shmat.restype = ctypes.c_void_p
    page = libc.mmap(None, 4096, mmap.PROT_READ | mmap.PROT_WRITE, 0x22, -1, 0)
    segment = libc.shmget(0, 4096, 0o1600)  # IPC_PRIVATE, IPC_CREAT | 0600

    def system_call(result, failed):
        return "refused %d" % ctypes.get_errno() if result == failed else "allowed"

    routes = {
        "mmap_rwx": lambda: mmap.mmap(-1, 4096, prot=7),
        "mmap_rx": lambda: mmap.mmap(-1, 4096, prot=5),
        "mprotect_rx": lambda: system_call(libc.mprotect(ctypes.c_void_p(page), 4096, 5), -1),
        "pkey_mprotect_rx": lambda: system_call(
            libc.syscall(329, ctypes.c_void_p(page), 4096, 5, -1), -1),
        "shmat_exec": lambda: system_call(libc.shmat(segment, None, 0o100000), 2**64 - 1),
        "mmap_rw": lambda: mmap.mmap(-1, 4096, prot=3),
    }
    for name, route in routes.items():
        try:
            outcome = route()
            print(name, outcome if isinstance(outcome, str) else "allowed")
        except OSError as error:
            print(name, "refused", error.errno)
    libc.shmctl(segment, 0, None)  # IPC_RMID
    """
)


@x86_only
def test_no_process_can_be_started_once_the_filter_is_installed():
    result = _run_script(ATTEMPTS)
    lines = result.stdout.split("\n")
    assert "thread True" in lines
    for route in ("subprocess", "fork", "posix_spawn", "fork_exec", "execv"):
        assert f"{route} refused 1" in lines, result.stdout


def test_without_the_filter_the_same_routes_start_processes():
    """The control: the attempts above are real ways to start a process."""
    control = ATTEMPTS.replace("process_boundary.install()", "pass").replace(
        '"execv": lambda: os.execv("/bin/true", ["true"]),', ""
    )
    result = _run_script(control)
    for route in ("fork", "posix_spawn", "fork_exec"):
        assert f"{route} started" in result.stdout.split("\n"), result.stdout


@x86_only
def test_no_memory_becomes_executable_without_a_file_once_the_filter_is_installed():
    result = _run_script(EXECUTABLE_MEMORY)
    lines = result.stdout.split("\n")
    assert "callback 2" in lines and "mmap_rw allowed" in lines, result.stdout
    for route in ("mmap_rwx", "mmap_rx", "mprotect_rx", "pkey_mprotect_rx", "shmat_exec"):
        assert f"{route} refused 1" in lines, result.stdout


def test_without_the_filter_memory_can_be_made_executable():
    """The control: each route above does make executable memory when nothing refuses it."""
    control = EXECUTABLE_MEMORY.replace("process_boundary.install()", "pass")
    result = _run_script(control)
    for route in ("mmap_rwx", "mmap_rx", "mprotect_rx", "shmat_exec"):
        assert f"{route} allowed" in result.stdout.split("\n"), result.stdout


# On CUDA processes may start (Triton's ptxas), only inside the worker's lineage: a sibling
# through CLONE_PARENT is refused, and a daemon that forks twice is adopted by the worker.
LINEAGE = textwrap.dedent(
    """
    import ctypes, os, signal, subprocess, time
    from gates.evaluator import process_boundary
    from gates.evaluator.detectors.concurrency import ChildProcess, check_children

    DAEMON = "sleep 30 </dev/null >/dev/null 2>&1 & exit 0"
    process_boundary.install(processes_allowed=True)
    print("run", subprocess.run(["/bin/true"]).returncode)
    libc = ctypes.CDLL(None, use_errno=True)
    pid = libc.syscall(56, 0x8000 | signal.SIGCHLD, 0, 0, 0, 0)  # clone(CLONE_PARENT)
    if pid == 0:
        os._exit(0)
    print("clone_parent", "refused %d" % ctypes.get_errno() if pid == -1 else "started")
    check_children("before")
    print("none alive")
    subprocess.run(["/bin/sh", "-c", DAEMON])  # the sleep is orphaned at once
    time.sleep(0.2)
    try:
        check_children("after a daemon")
    except ChildProcess as found:
        print("caught", "(sleep)" in str(found))
    for pid in [int(p) for p in open(f"/proc/self/task/{os.getpid()}/children").read().split()]:
        os.kill(pid, signal.SIGKILL)
    time.sleep(0.2)
    check_children("after the kill")  # a zombie has stopped: not a living child
    print("zombie ignored")
    """
)


@x86_only
def test_processes_on_cuda_stay_in_the_workers_lineage_and_are_seen_alive():
    result = _run_script(LINEAGE)
    lines = result.stdout.split("\n")
    for expected in ("run 0", "clone_parent refused 1", "none alive", "caught True"):
        assert expected in lines, result.stdout
    assert "zombie ignored" in lines, result.stdout


def test_without_the_lineage_filter_clone_parent_and_a_daemon_leave_the_lineage_unseen():
    """The control: CLONE_PARENT is a real way out of the worker's lineage, and without the
    subreaper a daemon that forks twice is no child of the worker."""
    control = LINEAGE.replace("process_boundary.install(processes_allowed=True)", "pass")
    control = control.replace("sleep 30", "sleep 2").split('check_children("after the kill")')[0]
    result = _run_script(control)
    lines = result.stdout.split("\n")
    assert "clone_parent started" in lines and "caught True" not in lines, result.stdout


# The candidate worker closes the boundary through `_close_process_creation`, which turns
# Torch's oneDNN path off on the CPU first: a BF16 `F.linear` (the production path of the
# projection operators) must then run, while executable memory stays refused.
BLAS_UNDER_THE_FILTER = textwrap.dedent(
    """
    import mmap, types
    import torch
    import torch.nn.functional as F
    from gates.evaluator.candidate_run import _close_process_creation

    guard = types.SimpleNamespace(notes=[])
    _close_process_creation(guard, torch.device("cpu"))
    x = torch.rand(50, 1024, dtype=torch.bfloat16)
    weight = torch.randn(1024, 1024, dtype=torch.bfloat16)
    print("linear", tuple(F.linear(x, weight).shape), guard.notes)
    try:
        mmap.mmap(-1, 4096, prot=7)
        print("mmap_rwx allowed")
    except OSError as error:
        print("mmap_rwx refused", error.errno)
    """
)


@x86_only
def test_a_bfloat16_product_runs_in_the_worker_once_the_filter_is_installed():
    result = _run_script(BLAS_UNDER_THE_FILTER)
    lines = result.stdout.split("\n")
    assert "linear (50, 1024) []" in lines, result.stdout
    assert "mmap_rwx refused 1" in lines, result.stdout
