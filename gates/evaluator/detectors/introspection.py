"""Reaching into the evaluator process: walking frames or the heap, reading its files,
or generating and rewriting code to hide from the other detectors.

An audit hook (which cannot be removed once added) is installed before the solution is
imported; it attributes each sensitive event to the nearest non-stdlib frame, records the
ones that come from the solution's own files, and blocks them (the call raises), so a
solution cannot act on what it found before the finding is reported.
"""

import importlib.machinery
import importlib.util
import os
import sys
import sysconfig
import threading

from gates.evaluator.detectors import CheatDetected
from gates.evaluator.detectors.concurrency import ChildProcess, ExtraThreads
from gates.evaluator.detectors.file_tampering import (
    MODIFYING_PATH_EVENTS,
    event_paths,
    is_write,
    under,
)


class EvaluatorIntrospection(CheatDetected):
    """The solution walked frames or the garbage collector's heap, e.g. to find reference
    outputs, hidden workloads or the evaluator's timing state."""


class EvaluatorFileAccess(CheatDetected):
    """The solution opened the evaluator's private files (request, reports, outputs), or
    something in the candidate process wrote under a protected tree (sources, packages)."""


class RawMemoryAccess(CheatDetected):
    """The solution read or wrote memory through ctypes, past every tensor-level check (a
    host computation on the inputs' bytes, written straight into an output)."""


class DynamicCode(CheatDetected):
    """The solution compiled, executed or rewrote code at run time, loaded a native library,
    or replaced the profile and trace hooks, which could hide work from the other detectors."""


HEAP_EVENTS = frozenset(
    {
        "gc.get_objects",
        "gc.get_referrers",
        "gc.get_referents",
        "sys._current_frames",
        "sys._current_exceptions",
        "ctypes.string_at",
        "ctypes.cdata",
        "ctypes.dlsym",
    }
)
FRAME_EVENTS = frozenset({"sys._getframe", "sys._getframemodulename"})
NATIVE_EVENTS = frozenset({"ctypes.dlopen"})  # a library's constructors run unseen
FRAME_ATTRIBUTES = frozenset({"tb_frame", "gi_frame", "cr_frame", "ag_frame", "f_back"})
CODE_EVENTS = frozenset(
    {
        "exec",
        "compile",
        "code.__new__",
        "sys.setprofile",
        "sys.settrace",
        "sys._setprofileallthreads",
        "sys._settraceallthreads",
        "sys.addaudithook",
    }
)
PROCESS_EVENTS = frozenset(
    {
        "os.fork",
        "os.forkpty",
        "os.system",
        "os.posix_spawn",
        "os.spawn",
        "os.exec",
        "subprocess.Popen",
        "pty.spawn",
        "os.kill",
        "os.killpg",
    }
)
PATH_EVENTS = MODIFYING_PATH_EVENTS  # one list for private-file and protected-tree checks
FRAME_HELPERS = ("inspect.py", "traceback.py")
THREAD_EVENTS = frozenset({"_thread.start_new_thread"})  # raised by Python 3.13+
WATCHED_EVENTS = (
    HEAP_EVENTS
    | NATIVE_EVENTS
    | FRAME_EVENTS
    | CODE_EVENTS
    | PROCESS_EVENTS
    | THREAD_EVENTS
    | PATH_EVENTS
    | {"open", "object.__setattr__", "import"}
)
NATIVE_SUFFIXES = tuple(importlib.machinery.EXTENSION_SUFFIXES) + (".so",)
TRITON_PACKAGE = os.path.dirname(os.path.realpath(importlib.util.find_spec("triton").origin))
STDLIB = os.path.realpath(sysconfig.get_paths()["stdlib"])
# Process memory and environment under /proc: `/proc/self/mem`, but also a thread's
# (`/proc/thread-self/mem`) and the judge's; memory reads and writes there skip every check.
# No other file of these names is opened while the solution runs.
PROC_PRIVATE = frozenset({"mem", "environ"})


class AuditMonitor:
    """Records sensitive events that come from the solution's files while armed."""

    def __init__(
        self,
        solution_dirs: list[str],
        private_dirs: list[str],
        protected_dirs: list[str] = (),
        writable_dirs: list[str] = (),
    ) -> None:
        """`protected_dirs`: no write under them from any caller, except under the
        `writable_dirs` inside them (the Triton cache, the evaluation's own folders)."""
        self.solution_dirs = tuple(os.path.realpath(d) + os.sep for d in solution_dirs)
        self.private_dirs = [os.path.realpath(d) + os.sep for d in private_dirs]
        self.protected_dirs = tuple(os.path.realpath(d) + os.sep for d in protected_dirs)
        self.writable_dirs = tuple(os.path.realpath(d) + os.sep for d in writable_dirs)
        self.armed = False
        self.findings: list[CheatDetected] = []
        self._busy = threading.local()
        sys.addaudithook(self._hook)
        self._guard_ctypes_copies()

    def _guard_ctypes_copies(self) -> None:
        """`ctypes.memmove` and `ctypes.memset` take plain addresses and raise no audit event:
        wrap them so the solution's calls are refused like the audited ctypes calls."""
        import ctypes

        for name in ("memmove", "memset"):
            setattr(ctypes, name, self._refusing(name, getattr(ctypes, name)))

    def _refusing(self, name: str, original):
        monitor = self

        def guarded(*args):
            caller = sys._getframe(1).f_code.co_filename
            if monitor.armed and os.path.realpath(caller).startswith(monitor.solution_dirs):
                monitor.findings.append(RawMemoryAccess(f"ctypes.{name} called from {caller}"))
                raise PermissionError("ctypes is not allowed in the evaluator")
            return original(*args)

        return guarded

    def _hook(self, event: str, args) -> None:
        if event == "object.__getattr__":  # thousands per tamper check: `__code__` reads
            if len(args) < 2 or args[1] not in FRAME_ATTRIBUTES:
                return
        elif event not in WATCHED_EVENTS and not event.startswith("ctypes."):
            return
        if not self.armed or getattr(self._busy, "active", False):
            return
        self._busy.active = True
        try:
            self._judge(event, args)
        finally:
            self._busy.active = False

    def _judge(self, event: str, args) -> None:
        if event == "import":
            self._judge_native_import(args)
            return
        if event == "object.__setattr__":
            rewrites_code = len(args) > 1 and args[1] in ("__code__", "__defaults__")
            origin = self._origin(walk_stdlib=False) if rewrites_code else None
            if origin is not None:
                self.findings.append(DynamicCode(f"{args[1]} of a function rewritten at {origin}"))
            return
        if is_write(event, args):
            self._refuse_protected_write(event, args)
        if event == "open" or event in PATH_EVENTS:
            paths = event_paths(event, args)
            if event == "os.symlink" and isinstance(args[0], str | bytes):
                paths.append(os.fsdecode(args[0]))  # a link to a private file is one too
            for path in paths:
                if self._is_private(path):
                    self.findings.append(EvaluatorFileAccess(f"{event} {path}"))
                    raise PermissionError(f"{path} belongs to the evaluator")
            if event == "open":
                self._refuse_protected_folder(args)
            return
        walks = HEAP_EVENTS | NATIVE_EVENTS | PROCESS_EVENTS | THREAD_EVENTS
        if event.startswith("ctypes.") and event not in walks:
            origin = self._origin(walk_stdlib=True)
            if origin is not None:
                self.findings.append(RawMemoryAccess(f"{event} called from {origin}"))
                raise PermissionError("ctypes is not allowed in the evaluator")
            return
        if event in PROCESS_EVENTS:
            origin = self._origin(walk_stdlib=True) or self._library_process(event)
        elif event in walks:
            origin = self._origin(walk_stdlib=True)
        elif event in FRAME_EVENTS:
            origin = self._origin(walk_stdlib=False, helpers=FRAME_HELPERS)
        else:
            origin = self._origin(walk_stdlib=False)
        if origin is None:
            return
        if event in CODE_EVENTS:
            self.findings.append(DynamicCode(f"{event} called from {origin}"))
            return
        if event in NATIVE_EVENTS:
            self.findings.append(DynamicCode(f"native library {args[0]!r} loaded from {origin}"))
            raise PermissionError("loading native libraries is not allowed in the evaluator")
        if event in PROCESS_EVENTS:
            self.findings.append(ChildProcess(f"{event} called from {origin}"))
        elif event in THREAD_EVENTS:
            self.findings.append(ExtraThreads(f"a thread was started from {origin}"))
        else:
            what = args[1] if event == "object.__getattr__" else event
            self.findings.append(EvaluatorIntrospection(f"{what} used from {origin}"))
        raise PermissionError(f"{event} is not allowed in the evaluator")

    def _library_process(self, event: str) -> str | None:
        """A process started by library code on the solution's behalf (a compiler driver, a
        build helper): only Triton, compiling its own kernels, may start one."""
        caller = _nearest_outside_stdlib(sys._getframe(3))
        if caller is None or caller.startswith(TRITON_PACKAGE + os.sep):
            return None
        return f"{caller} (library code)"

    def _judge_native_import(self, args) -> None:
        """Native code loaded through the import system raises no ctypes event: a shared
        object from outside the installed packages may only be Triton's own launcher."""
        filename = args[1] if len(args) > 1 else None
        if not isinstance(filename, str) or not filename.endswith(NATIVE_SUFFIXES):
            return
        path = os.path.realpath(filename)
        installed = under(path, self.protected_dirs) and not under(path, self.writable_dirs)
        caller = _nearest_outside_stdlib(sys._getframe(3)) or ""
        if installed or caller.startswith(TRITON_PACKAGE + os.sep):
            return
        self.findings.append(DynamicCode(f"native module {path} loaded from {caller}"))
        raise PermissionError("loading native code is not allowed in the evaluator")

    def _refuse_protected_write(self, event: str, args) -> None:
        written = event_paths(event, args)
        if event == "shutil.copyfile":
            written = written[1:]  # the source is only read
        for name in written:
            if under(name, self.protected_dirs) and not under(name, self.writable_dirs):
                self.findings.append(EvaluatorFileAccess(f"{event} writes {name}"))
                raise PermissionError(f"{name} is protected during the evaluation")

    def _refuse_protected_folder(self, args) -> None:
        """No descriptor of a protected folder: `open` events do not carry the `dir_fd` a
        later `os.open(name, ..., dir_fd=fd)` writes through, so the folder is the place."""
        path = args[0] if args else None
        if not isinstance(path, str | bytes) or not os.path.isdir(path):
            return
        name = os.path.abspath(os.fsdecode(path))
        if under(name, self.protected_dirs) and not under(name, self.writable_dirs):
            self.findings.append(EvaluatorFileAccess(f"open of the protected folder {name}"))
            raise PermissionError(f"{name} is protected during the evaluation")

    def _is_private(self, path: str) -> bool:
        real = os.path.realpath(path)
        if os.path.basename(real) in PROC_PRIVATE or os.path.basename(path) in PROC_PRIVATE:
            # Any process's or thread's memory or environment, by any of its paths, also as a
            # name relative to a descriptor the open event does not show.
            return True
        if real == "/proc" or real.startswith("/proc/"):
            return os.path.isdir(real)  # no descriptor of a /proc folder to reach them from
        return any(real.startswith(d) or real + os.sep == d for d in self.private_dirs)

    def _origin(self, walk_stdlib: bool, helpers: tuple[str, ...] = ()) -> str | None:
        """The solution file and line behind the event, or None if it is not the solution's.

        Stdlib frames are looked through when `walk_stdlib` is set (or for the named helper
        modules); otherwise the immediate caller decides.
        """
        frame = sys._getframe(3)
        while frame is not None:
            filename = os.path.realpath(frame.f_code.co_filename)
            in_stdlib = filename.startswith(STDLIB) and "site-packages" not in filename
            if in_stdlib and (walk_stdlib or filename.endswith(helpers)):
                frame = frame.f_back
                continue
            for directory in self.solution_dirs:
                if filename.startswith(directory):
                    return f"{filename[len(directory) :]}:{frame.f_lineno}"
            return None
        return None

    def raise_first(self) -> None:
        if self.findings:
            raise self.findings[0]


def _nearest_outside_stdlib(frame) -> str | None:
    """The file of the nearest frame outside the standard library and frozen modules."""
    while frame is not None:
        filename = frame.f_code.co_filename
        real = os.path.realpath(filename)
        in_stdlib = real.startswith(STDLIB) and "site-packages" not in real
        if not (in_stdlib or filename.startswith("<frozen")):
            return real
        frame = frame.f_back
    return None
