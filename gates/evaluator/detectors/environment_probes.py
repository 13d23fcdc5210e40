"""A solution that asks where it runs: the loaded-module table, an attached profiler or
tracer, the caller's frames, environment variables, argv, the process or working directory,
the host; or when it runs: the host's clock and randomness, the GPU's timer; or how many calls
came before: the allocator's counters, the generators' offsets.

Such a kernel can compute honestly while something looks like an evaluator or a test runner
(a judge module loaded, a profile hook on), or until a date or for all but a rare call, and
return something else in a user's process after `install`; no output check can see that. So
the question itself is refused, two ways:

- statically, before the import: the solution's sources may import only what a kernel needs
  (`source_imports.py`, an allow-list: every other module is a way to ask the host), may not
  use the builtins that read files or run code (`open`, `eval`, ...) or that answer
  differently in every process (`id`, `hash`, a tensor's `data_ptr`), and may not name these
  reads (an attribute or `from` import of `sys.modules`, `sys.getprofile`, `os.environ`, ...,
  torch's own answers in `torch_probes.py`, a string holding such a name, `__import__`); a
  read the baseline's file at the same path already makes (the vendored runtime asks whether
  Triton's interpreter is on) is not new and is allowed;
- at run time, for what a spelled-out name hides: the query functions are wrapped, and a call
  whose nearest caller outside the standard library is one of the solution's files is recorded
  (the call still answers, so the solution behaves as it would have).

Both are reported only when the run would otherwise pass, the judge's verdict included: a
solution another detector names is rejected with that detector's finding, so every cheat
fixture keeps its own class.
"""

import ast
import importlib
import importlib.util
import os
import sys
import sysconfig
import threading
from collections import Counter
from collections.abc import Mapping

from gates.evaluator.detectors import CheatDetected
from gates.evaluator.detectors.source_imports import refused_imports
from gates.evaluator.detectors.torch_probes import TORCH_PROBED_NAMES, TORCH_WRAPPED
from gates.python_source import parse_python


class EnvironmentInspection(CheatDetected):
    """The solution asked where it runs (loaded modules, profiler or tracer hooks, frames,
    environment, argv, process, working directory, a module beyond the import allow-list), when
    (clocks, randomness) or after how many calls (allocator counters, RNG offsets), so it could
    behave one way while judged and another in a user's process."""


PROBED_NAMES = frozenset(
    {
        "modules",
        "getprofile",
        "gettrace",
        "setprofile",
        "settrace",
        "_getframe",
        "_getframemodulename",
        "_current_frames",
        "_current_exceptions",
        "_profile_hook",
        "_trace_hook",
        "environ",
        "environb",
        "getenv",
        "getenvb",
        "argv",
        "orig_argv",
        "getcwd",
        "getcwdb",
        "getpid",
        "getppid",
        "find_spec",
        "find_loader",
        "f_back",
        "f_globals",
        "f_locals",
        "f_code",
        "tb_frame",
        "__traceback__",
        "currentframe",
        "__import__",
        "__dict__",
        "__closure__",
        "__globals__",
        "__builtins__",
        "__wrapped__",
        "cell_contents",
        "__getattribute__",
        "attrgetter",
        "methodcaller",
        # when it runs: host clocks and randomness, the GPU's own timer and inline assembly
        "perf_counter",
        "perf_counter_ns",
        "monotonic",
        "monotonic_ns",
        "time_ns",
        "process_time",
        "thread_time",
        "random",
        "urandom",
        "getrandom",
        "globaltimer",
        "clock64",
        "inline_asm_elementwise",
        "elapsed_time",
        "getrusage",
        # how many times it ran: a cache's hit count, the collector's counters
        "cache_info",
        "get_count",
        "get_stats",
        # which process it is: an address, a salted hash (a coin flipped once per process)
        "data_ptr",
        "__hash__",
    }
)
"""Names whose only use in a kernel is to ask where or when it runs."""
NAMESPACE_READERS = frozenset({"getattr", "vars", "globals", "locals", "dir"})
"""Builtins that reach a name computed at run time (`getattr(sys, "mod" + "ules")`)."""
HOST_BUILTINS = frozenset({"open", "exec", "eval", "compile", "breakpoint", "input"})
"""Builtins that read the host's files or the terminal, or run code no literal shows."""
PROCESS_BUILTINS = frozenset({"id", "hash"})
"""Builtins whose answers differ from one process to the next (an address, a string hash
salted per process): a kernel wrong in one process of a thousand passes every judged one."""
REFUSED_BUILTINS = HOST_BUILTINS | PROCESS_BUILTINS
TENSOR_PARAMETER_NAMES = frozenset({"input"})
"""Builtins torch's convention also gives a tensor parameter (`def gelu(input)`): in a file
with such a parameter the name is that tensor, not the builtin."""
READ_ATTRIBUTES = PROBED_NAMES | NAMESPACE_READERS | TORCH_PROBED_NAMES
"""Attribute names refused wherever they are read."""
PROBING_MODULES = frozenset(
    {
        "inspect",
        "traceback",
        "importlib",
        "time",
        "datetime",
        "calendar",
        "random",
        "secrets",
        "uuid",
        "resource",
        "gc",
    }
)
"""Modules a kernel has no use for but to look at its callers, the heap or the import system,
or to tell one moment or one call from another: their imports are refused with every module
beyond the allow-list, and a string naming one (a computed import's argument) is refused too."""
WRAPPED = (
    (sys, "getprofile"),
    (sys, "gettrace"),
    (threading, "getprofile"),
    (threading, "gettrace"),
    (os, "getenv"),
    (os, "getcwd"),
    (os, "getpid"),
    (os, "getppid"),
    (importlib.util, "find_spec"),
)
"""The query functions a spelled-out name (`getattr(m, "get" + "profile")`) still reaches."""
STDLIB = os.path.realpath(sysconfig.get_paths()["stdlib"])


def source_probes(
    sources: Mapping[str, str], known: Mapping[str, str], own_package: str | None = None
) -> list[str]:
    """Each read of where the code runs in `sources` ({path: text}) that the file at the same
    path in `known` (the baseline's) does not make, as `path:line: what`. `own_package` is a
    package the sources may import by name besides the allow-list (a registration target's
    runtime package)."""
    found = []
    for path, text in sorted(sources.items()):
        if not path.endswith(".py"):
            continue
        baseline = _probes(known.get(path, ""), path, own_package)
        allowed = Counter(what for _, what in baseline)
        for line, what in _probes(text, path, own_package):
            if allowed[what] > 0:
                allowed[what] -= 1
            else:
                found.append(f"{path}:{line}: {what}")
    return found


def source_inspection(found: list[str]) -> EnvironmentInspection | None:
    """The finding naming the first read `source_probes` found, if any."""
    if not found:
        return None
    more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
    return EnvironmentInspection(f"asks where or when it runs: {found[0]}{more}")


def _probes(text: str, path: str, own_package: str | None) -> list[tuple[int, str]]:
    try:
        tree = parse_python(text, filename=path)
    except SyntaxError:
        return []  # the import reports it
    called = {id(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}
    parameters = {node.arg for node in ast.walk(tree) if isinstance(node, ast.arg)}
    builtins = REFUSED_BUILTINS - (parameters & TENSOR_PARAMETER_NAMES)
    found = []
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Call) and _reads_a_computed_name(node):
            found.append((line, f"calls {node.func.id}() on a computed name"))
        elif isinstance(node, ast.Attribute) and node.attr in READ_ATTRIBUTES:
            found.append((line, f"reads .{node.attr}"))
        elif isinstance(node, ast.Name):
            found += [(line, what) for what in _name_use(node, id(node) in called, builtins)]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if _names_a_probe(node.value):
                found.append((line, f"names {node.value!r}"))
        elif isinstance(node, ast.Import | ast.ImportFrom):
            found += [(line, what) for what in refused_imports(node, path, own_package)]
            found += [(line, what) for what in _imported_probes(node)]
    return sorted(found)


def _name_use(node: ast.Name, called: bool, builtins: frozenset[str]) -> list[str]:
    """A probe used by its bare name, a builtin that reads the host (of `builtins`), or a
    namespace reader passed on as a value (`functools.reduce(getattr, ...)`), where no call
    shows its name."""
    if node.id in PROBED_NAMES:
        return [f"uses {node.id}"]
    if node.id in builtins:
        return [f"uses the builtin {node.id}"]
    if node.id in NAMESPACE_READERS and not called:
        return [f"passes {node.id} as a value"]
    return []


def _names_a_probe(value: str) -> bool:
    return (
        value in PROBED_NAMES
        or value in TORCH_PROBED_NAMES
        or value.split(".")[0] in PROBING_MODULES
    )


def _imported_probes(node: ast.Import | ast.ImportFrom) -> list[str]:
    """The probes a `from` import brings in by name (`from torch import initial_seed`)."""
    if isinstance(node, ast.Import):
        return []
    return [
        f"imports {alias.name} from {node.module}"
        for alias in node.names
        if alias.name in PROBED_NAMES | TORCH_PROBED_NAMES | REFUSED_BUILTINS
    ]


def _reads_a_computed_name(call: ast.Call) -> bool:
    """`getattr(x, name)` with a name that is not a literal, or `vars()`, `globals()`, ...:
    a way to any name of this list that no literal shows."""
    if not isinstance(call.func, ast.Name) or call.func.id not in NAMESPACE_READERS:
        return False
    if call.func.id != "getattr":
        return True
    return len(call.args) < 2 or not isinstance(call.args[1], ast.Constant)


class EnvironmentQueryTripwires:
    """Wraps the query functions (`WRAPPED`, and torch's counters and generator state in
    `TORCH_WRAPPED`) and records the calls made from the solution's files; every call, the
    solution's included, gets its true answer."""

    def __init__(self, solution_dirs: list[str]) -> None:
        self.solution_dirs = tuple(os.path.realpath(d) + os.sep for d in solution_dirs)
        self.findings: list[EnvironmentInspection] = []
        self._busy = threading.local()
        torch_wrapped = [
            (importlib.import_module(module), name)
            for module, names in TORCH_WRAPPED.items()
            for name in names
        ]
        for module, name in [*WRAPPED, *torch_wrapped]:
            original = getattr(module, name, None)
            if original is not None:
                setattr(module, name, self._wrap(f"{module.__name__}.{name}", original))

    def _wrap(self, qualified: str, original):
        tripwires = self

        def query(*args, **kwargs):
            if not getattr(tripwires._busy, "active", False):  # realpath asks os.getcwd
                tripwires._busy.active = True
                try:
                    tripwires._record(qualified, sys._getframe(1))
                finally:
                    tripwires._busy.active = False
            return original(*args, **kwargs)

        return query

    def _record(self, qualified: str, frame) -> None:
        caller = _nearest_outside_stdlib(frame)
        if caller is not None and caller[0].startswith(self.solution_dirs):
            where = f"{os.path.basename(caller[0])}:{caller[1]}"
            self.findings.append(
                EnvironmentInspection(f"asks where it runs: {qualified}() from {where}")
            )

    def raise_first(self) -> None:
        if self.findings:
            raise self.findings[0]


def _nearest_outside_stdlib(frame) -> tuple[str, int] | None:
    while frame is not None:
        filename = os.path.realpath(frame.f_code.co_filename)
        in_stdlib = filename.startswith(STDLIB) and "site-packages" not in filename
        if not (in_stdlib or frame.f_code.co_filename.startswith("<frozen")):
            return filename, frame.f_lineno
        frame = frame.f_back
    return None
