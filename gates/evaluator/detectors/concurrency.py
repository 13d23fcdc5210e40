"""Work hidden from the timer on other threads or other CUDA streams."""

import os
import threading

from gates.evaluator.detectors import CheatDetected


class ExtraThreads(CheatDetected):
    """The solution started threads that outlive its call (background work or tampering)."""


class ChildProcess(CheatDetected):
    """The solution started another process (fork, spawn, subprocess) to work outside the
    evaluator's view."""


class SideStreamWork(CheatDetected):
    """The solution launched work on a CUDA stream other than the evaluator's, so the end
    event does not wait for it."""


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
    tids = [int(entry) for entry in os.listdir("/proc/self/task")]
    # only a new thread's name is read (a file per thread, each open an audit event)
    new_os = [
        tid
        for tid in tids
        if tid not in os_before and _thread_name(tid) == main_name and _running(tid)
    ]
    if new_os:
        raise ExtraThreads(f"{len(new_os)} new native threads appeared during the solution")


def live_children() -> list[str]:
    """Every living child of this process, whichever thread started it, as "pid (name)". The
    worker is a child subreaper (`process_boundary.install`), so a daemon that forked
    twice to leave its parent is still counted here; a zombie has stopped and is left out."""
    found = []
    for task in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{task}/children") as handle:
                pids = handle.read().split()
        except OSError:  # the thread ended meanwhile
            continue
        for pid in pids:
            state, name = _process_state(pid)
            if state not in ("Z", "X", ""):
                found.append(f"{pid} ({name})")
    return found


def check_children(when: str) -> None:
    """Raise if a process the solution started is alive (a Triton compile's `ptxas` has
    ended by the time any check runs: Triton waits for it)."""
    children = live_children()
    if children:
        raise ChildProcess(f"processes started by the solution are alive {when}: {children}")


def _process_state(pid: str) -> tuple[str, str]:
    """A process's state letter and name from /proc/PID/stat ("" once it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            stat = handle.read()
    except OSError:
        return "", ""
    name_end = stat.rfind(")")
    return stat[name_end + 2 : name_end + 3], stat[stat.find("(") + 1 : name_end]


def _running(tid: int) -> bool:
    """Whether the thread has not exited: a joined thread's entry can stay in /proc for a
    moment as a zombie (Z) or dead (X) task, which runs nothing."""
    try:
        with open(f"/proc/self/task/{tid}/stat") as handle:
            state = handle.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def _thread_name(tid: int) -> str:
    try:
        with open(f"/proc/self/task/{tid}/comm") as handle:
            return handle.read().strip()
    except OSError:
        return ""


class ThreadStartTripwire:
    """Wraps the thread-start entry points and records starts made from the solution's files
    (a short-lived thread escapes both the thread count and the caller's ATen trace)."""

    ENTRY_POINTS = (
        ("threading", "_start_new_thread"),
        ("threading", "_start_joinable_thread"),
        ("_thread", "start_new_thread"),
        ("_thread", "start_joinable_thread"),
    )

    def __init__(self, solution_dirs: list[str]) -> None:
        import sys

        self.solution_dirs = tuple(os.path.realpath(d) + os.sep for d in solution_dirs)
        self.findings: list[ExtraThreads] = []
        for module_name, name in self.ENTRY_POINTS:
            module = sys.modules.get(module_name) or __import__(module_name)
            original = getattr(module, name, None)
            if original is not None:
                setattr(module, name, self._wrap(original))

    def _wrap(self, original):
        import sys
        import sysconfig

        stdlib = os.path.realpath(sysconfig.get_paths()["stdlib"])
        tripwire = self

        def start_thread(*args, **kwargs):
            frame = sys._getframe(1)
            while frame is not None and frame.f_code.co_filename.startswith(stdlib):
                frame = frame.f_back
            if frame is not None and frame.f_code.co_filename.startswith(tripwire.solution_dirs):
                where = f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno}"
                tripwire.findings.append(ExtraThreads(f"a thread was started from {where}"))
            return original(*args, **kwargs)

        return start_thread

    def raise_first(self) -> None:
        if self.findings:
            raise self.findings[0]
