"""Switching off the ATen trace (popping or disabling dispatch modes, excluding the Python
dispatch key) so PyTorch compute runs unseen.

The functions that do this are wrapped before the solution is imported, under every name a
loaded module gives them (`torch.utils._python_dispatch` and `torch.utils._mode_utils` hold
their own references); a call whose caller is one of the solution's files is recorded. The
wrapper keeps no `__wrapped__` that would hand the original back.

A wrapper is Python, so a determined solution can still reach the original (through the
wrapper's closure, say). The second layer does not depend on the Python dispatch key at all:
the profiler's record-function hooks see every ATen op the call runs (`AtenRecorder`), and
compute ops that the profiler saw but the trace did not mean the trace was switched off.
"""

import os
import sys

import torch
import torch._C._autograd as autograd_bindings
import torch.utils._python_dispatch as python_dispatch

from gates.evaluator.detectors import CheatDetected
from gates.evaluator.detectors.compute_fallback import ALWAYS_ALLOWED, LAYOUT_COPY_OPS
from gates.evaluator.detectors.profiler_trees import call_trees, top_level_trees

# Ops that move, allocate or describe data; nested ones the profiler sees under allowed ops.
UNSEEN_ALLOWED = (
    ALWAYS_ALLOWED
    | LAYOUT_COPY_OPS
    | {
        "to",
        "fill_",
        "set_",
        "empty_strided",
        "resolve_conj",
        "resolve_neg",
        "result_type",
        "item",
        "_local_scalar_dense",
        "detach_",
        "squeeze_",
        "unsqueeze_",
        "transpose_",
        "t_",
        "as_strided_",
    }
)

# Ops torch runs below the Python dispatch key on its own (conjugate/negative-bit resolution
# for `.numpy()`, the detaches and aliases of serialisation and subclasses): no record of
# them is expected; every other top-level op must have left one.
UNRECORDED_EXEMPT = frozenset(
    {
        "size", "stride", "dim", "numel", "is_contiguous", "sym_size", "sym_stride",
        "sym_numel", "resolve_conj", "resolve_neg", "detach", "detach_", "to", "alias",
        "lift_fresh", "lift_fresh_copy", "_local_scalar_dense", "item",
    }
)  # fmt: skip

WRAPPED = (
    (torch._C, "_DisableTorchDispatch"),
    (torch._C, "_ExcludeDispatchKeyGuard"),
    (torch._C, "_pop_torch_dispatch_stack"),
    (torch._C, "_set_dispatch_mode"),
    (torch._C, "_unset_dispatch_mode"),
    (torch._C, "_DisablePythonDispatcher"),
    (torch._C, "_dispatch_tls_set_dispatch_key_excluded"),
    (torch._C, "_dispatch_tls_set_dispatch_key_included"),
    (torch._C, "_IncludeDispatchKeyGuard"),
    (torch._C, "_ForceDispatchKeyGuard"),
    (autograd_bindings, "_disable_profiler"),
    (autograd_bindings, "_disable_profiler_legacy"),
    (autograd_bindings, "_enable_profiler"),
    (autograd_bindings, "_enable_profiler_legacy"),
    (python_dispatch, "_disable_current_modes"),
    (python_dispatch, "_pop_mode"),
    (python_dispatch, "_pop_mode_temporarily"),
)


class DispatchTraceEvaded(CheatDetected):
    """The solution disabled or popped the evaluator's dispatch mode to hide its ATen ops."""


class TraceEvasionTripwires:
    """Wraps the mode-disabling entry points and records the solution's calls to them."""

    def __init__(self, solution_dirs: list[str]) -> None:
        self.solution_dirs = tuple(os.path.realpath(d) + os.sep for d in solution_dirs)
        self.findings: list[DispatchTraceEvaded] = []
        originals = {}
        for owner, name in WRAPPED:
            original = getattr(owner, name, None)
            if original is not None:
                originals[id(original)] = (original, self._wrap(name, original))
        for module in list(sys.modules.values()):
            for attribute, value in list(getattr(module, "__dict__", {}).items()):
                entry = originals.get(id(value))
                if entry is not None and entry[0] is value:
                    setattr(module, attribute, entry[1])

    def _wrap(self, name, original):
        tripwires = self

        def tripwire(*args, **kwargs):
            caller = sys._getframe(1)
            if caller.f_code.co_filename.startswith(tripwires.solution_dirs):
                tripwires.findings.append(
                    DispatchTraceEvaded(f"{name} called from {caller.f_code.co_filename}")
                )
            return original(*args, **kwargs)

        return tripwire

    def raise_first(self) -> None:
        if self.findings:
            raise self.findings[0]


class AtenRecorder:
    """Every ATen op run while active, as seen by the profiler (CPU activity only), grouped
    into call trees: a top-level op with the ops it ran inside it."""

    def __init__(self) -> None:
        self.trees: list[tuple[str, set[str]]] = []  # (top-level op, every op in its tree)
        self._profile = None

    def __enter__(self) -> "AtenRecorder":
        from torch.profiler import ProfilerActivity, profile

        self._profile = profile(activities=[ProfilerActivity.CPU])
        self._profile.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        try:
            self._profile.__exit__(*exc)
            result = self._profile.profiler.kineto_results
            trees = call_trees(result) if result else []
            if trees is None:  # device or memory events: torch's own parser places them
                events = self._profile.events() or []
                trees = top_level_trees(events)
        except Exception as error:  # the solution stopped the profiler under us
            raise DispatchTraceEvaded(f"the ATen recorder was stopped: {error}") from None
        self.trees = trees

    def unseen_compute(self, seen: set[str], extra: frozenset[str]) -> list[str]:
        """Compute ops in call trees of which the trace saw no op at all, or inside an op
        that only moves or describes data.

        A composite op the trace never sees (it sees what the op decomposes into) is
        explained by its children; a tree with nothing seen ran past the trace. An op the
        trace allows (`alias`, `copy_`) with arithmetic inside it runs a replaced kernel: a
        Python kernel registered for it runs below the dispatch mode, unseen by the trace.
        """
        unseen: set[str] = set()
        for top, names in self.trees:
            if not names & seen or top in UNSEEN_ALLOWED:
                unseen |= names - UNSEEN_ALLOWED - extra
        return sorted(unseen)

    def unrecorded(self, seen: set[str]) -> list[str]:
        """Top-level ops that touch data of which the trace recorded nothing at all: its
        records were erased or bypassed (the profiler's view is out of the solution's reach)."""
        return sorted(
            top for top, names in self.trees if not names & seen and names - UNRECORDED_EXEMPT
        )
