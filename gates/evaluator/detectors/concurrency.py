"""Work hidden from the timer on other threads or other CUDA streams."""

import os
import threading

from gates.evaluator.detectors import CheatDetected


class ExtraThreads(CheatDetected):
    """The solution started threads that outlive its call (background work or tampering)."""

    detector = "concurrency"


class ChildProcess(CheatDetected):
    """The solution started another process (fork, spawn, subprocess) to work outside the
    evaluator's view."""

    detector = "concurrency"


class SideStreamWork(CheatDetected):
    """The solution launched work on a CUDA stream other than the evaluator's, so the end
    event does not wait for it."""

    detector = "concurrency"


def thread_snapshot() -> tuple[frozenset[int], str]:
    """Python thread idents and the main thread's OS name, before the solution runs."""
    return frozenset(t.ident for t in threading.enumerate()), _thread_name(os.getpid())


def os_threads() -> dict[int, str]:
    """Every OS thread of this process with its name."""
    result = {}
    for entry in os.listdir("/proc/self/task"):
        result[int(entry)] = _thread_name(int(entry))
    return result


def check_threads(python_before: frozenset[int], os_before: dict[int, str], main_name: str):
    """Raise if new Python threads are alive, or new unnamed OS threads appeared."""
    new_python = [t.name for t in threading.enumerate() if t.ident not in python_before]
    if new_python:
        raise ExtraThreads(f"threads started by the solution are running: {new_python}")
    new_os = [
        tid for tid, name in os_threads().items() if tid not in os_before and name == main_name
    ]
    if new_os:
        raise ExtraThreads(f"{len(new_os)} new native threads appeared during the solution")


def _thread_name(tid: int) -> str:
    try:
        with open(f"/proc/self/task/{tid}/comm") as handle:
            return handle.read().strip()
    except OSError:
        return ""
