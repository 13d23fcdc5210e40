"""Native code the solution brought, whichever loader mapped it (ctypes, importlib,
`torch.ops.load_library`, cffi): on the CPU, a file mapped executable after the guard was
armed must belong to the installed Python trees or the system's libraries and be older than
the evaluation; anything else runs where no hook looks.

The audit hook names native loads it can attribute to the solution's frames; a loader called
through a library's frame (`torch.ops.load_library`) is attributed to that library. This check
asks the process's own memory map instead, so the route does not matter. On CUDA it stays off:
Triton maps its compiled launcher from its cache there, and the graph verdict is the boundary.
"""

import os
import sys
import time

from gates.evaluator.detectors.introspection import DynamicCode
from gates.evaluator.watched_scope import protected_trees

DELETED = " (deleted)"


def trusted_roots() -> tuple[str, ...]:
    """The trees the guard refuses writes under (the repository, every import root, the system
    library folders) and the Python prefixes."""
    paths = {*protected_trees(), sys.prefix, sys.base_prefix, sys.exec_prefix}
    return tuple(sorted({os.path.realpath(p) + os.sep for p in paths if p and p != os.sep}))


def executable_files() -> set[str]:
    """Every file mapped executable in this process, as /proc/self/maps names it."""
    files = set()
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.rstrip("\n").split(maxsplit=5)
            if len(fields) == 6 and "x" in fields[1] and fields[5].startswith("/"):
                files.add(fields[5])
    return files


class NativeMappings:
    """The executable mappings at arming time; `check` names a new one the solution brought."""

    def __init__(self) -> None:
        self.armed_at = time.time()
        self.trusted = trusted_roots()
        self.known = executable_files()

    def check(self, when: str) -> None:
        for path in sorted(executable_files() - self.known):
            why = self._untrusted(path)
            if why is not None:
                raise DynamicCode(f"native code {path} mapped {when}: {why}")
            self.known.add(path)

    def _untrusted(self, path: str) -> str | None:
        if path.endswith(DELETED):
            return "its file was deleted"
        real = os.path.realpath(path)
        if not real.startswith(self.trusted):
            return "outside the installed packages and system libraries"
        try:
            changed = os.stat(real).st_ctime
        except OSError:
            return "its file cannot be read"
        if changed >= self.armed_at:
            return "written during the evaluation"
        return None
