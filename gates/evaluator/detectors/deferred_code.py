"""Leaving code to run later, outside the traced call, where a Torch fallback goes unseen.

The ATen trace covers each call of the solution. Code the solution arranges to run after the
call returns escapes it: a `weakref.finalize`, an attribute with `__del__` or a new subclass
on an input tensor (run when the evaluator drops or digests the input), an import hook, a
`copyreg` reducer, a replaced entry of `sys.modules`, a signal handler or interval timer, a
garbage-collector callback, a replaced interpreter hook, a Torch function or dispatch mode
left on the mode stack (it sees every Torch call the evaluator makes next), or (Python
3.12+) a `sys.monitoring` tool. Such code could fill an output the call left empty. The
evaluator copies each output before it drops anything, checks the inputs for attachments
after every call, and compares the interpreter's hooks with a snapshot taken before the
import.
"""

import _signal
import copyreg
import gc
import operator
import signal
import sys
import threading
import weakref

import torch

from gates.evaluator.detectors import CheatDetected

SYS_HOOKS = ("excepthook", "unraisablehook", "displayhook", "breakpointhook")
TIMERS = ("ITIMER_REAL", "ITIMER_VIRTUAL", "ITIMER_PROF")
UNCATCHABLE = {signal.SIGKILL, signal.SIGSTOP}
# Named once at import: the enum lookups cost more than the rest of a check.
SIGNAL_NAMES = {
    number: signal.Signals(number).name
    for number in signal.valid_signals()
    if number not in UNCATCHABLE and number in signal.Signals._value2member_map_
}
_getsignal = _signal.getsignal  # the raw handler; bound before the solution is imported


class DeferredCode(CheatDetected):
    """The solution left code to run after its call returned, outside the trace."""


def check_attachments(where: str, tensors: list[torch.Tensor]) -> None:
    """Raise if a tensor the evaluator owns carries a weak reference, attribute, hook or grad."""
    for index, tensor in enumerate(tensors):
        found = []
        if type(tensor) is not torch.Tensor:
            found.append(f"a new class {type(tensor).__name__}")
        if weakref.getweakrefcount(tensor):
            found.append("a weak reference or finalizer")
        if getattr(tensor, "__dict__", None):
            found.append(f"attributes {sorted(tensor.__dict__)}")
        if tensor.grad is not None or tensor.requires_grad:
            found.append("a gradient")
        if getattr(tensor, "_backward_hooks", None):
            found.append("backward hooks")
        if found:
            raise DeferredCode(f"{where}: input {index} carries {', '.join(found)}")


class InterpreterHooks:
    """Signal handlers, timers, GC callbacks and interpreter hooks, as of construction."""

    def __init__(self) -> None:
        self.state = _hook_state()
        self.modules = dict(sys.modules)

    def check(self, when: str) -> None:
        now = _hook_state()
        changed = sorted(key for key in now if not _same(now[key], self.state.get(key)))
        now = map(sys.modules.get, self.modules)
        replaced = []
        if not all(map(operator.is_, now, self.modules.values())):  # in C: the usual case
            replaced = [n for n, m in self.modules.items() if sys.modules.get(n) is not m]
        changed += [f"sys.modules[{name!r}]" for name in replaced[:2]]
        if changed:
            raise DeferredCode(f"{when}: {', '.join(changed[:4])} changed since the import")


def _same(a, b) -> bool:
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return a is b or (isinstance(a, int | float | str) and a == b)


def mode_depths(
    function_modes=torch._C._len_torch_function_stack,
    dispatch_modes=torch._C._len_torch_dispatch_stack,
) -> tuple[int, int]:
    """How many torch function and dispatch modes are active (bound at import, before any
    solution is: the timing loop calls this after every timed call)."""
    return function_modes(), dispatch_modes()


def _hook_state() -> dict:
    functions, dispatches = mode_depths()
    state = {"torch function modes": functions, "torch dispatch modes": dispatches}
    for number, name in SIGNAL_NAMES.items():
        try:
            state[f"signal {name}"] = _getsignal(number)
        except (ValueError, OSError):
            continue
    for name in TIMERS:
        state[f"timer {name}"] = tuple(signal.getitimer(getattr(signal, name)))
    state["gc callbacks"] = tuple(gc.callbacks)
    state["sys.getprofile()"] = sys.getprofile()
    state["sys.gettrace()"] = sys.gettrace()
    state["sys.meta_path"] = tuple(sys.meta_path)
    state["sys.path_hooks"] = tuple(sys.path_hooks)
    state["copyreg.dispatch_table"] = tuple(copyreg.dispatch_table.items())
    for name in SYS_HOOKS:
        state[f"sys.{name}"] = getattr(sys, name, None)
    state["threading.excepthook"] = threading.excepthook
    monitoring = getattr(sys, "monitoring", None)
    if monitoring is not None:
        state["sys.monitoring tools"] = tuple(monitoring.get_tool(i) for i in range(6))
    return state
