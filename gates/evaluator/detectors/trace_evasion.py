"""Switching off the ATen trace (popping or disabling dispatch modes, excluding the Python
dispatch key) so PyTorch compute runs unseen.

The functions that do this are wrapped before the solution is imported; a call whose caller
is one of the solution's files is recorded.
"""

import os
import sys

import torch
import torch.utils._python_dispatch as python_dispatch

from gates.evaluator.detectors import CheatDetected

WRAPPED = (
    (torch._C, "_DisableTorchDispatch"),
    (torch._C, "_ExcludeDispatchKeyGuard"),
    (torch._C, "_pop_torch_dispatch_stack"),
    (torch._C, "_set_dispatch_mode"),
    (torch._C, "_unset_dispatch_mode"),
    (torch._C, "_DisablePythonDispatcher"),
    (python_dispatch, "_disable_current_modes"),
    (python_dispatch, "_pop_mode"),
    (python_dispatch, "_pop_mode_temporarily"),
)


class DispatchTraceEvaded(CheatDetected):
    """The solution disabled or popped the evaluator's dispatch mode to hide its ATen ops."""

    detector = "compute_fallback"


class TraceEvasionTripwires:
    """Wraps the mode-disabling entry points and records the solution's calls to them."""

    def __init__(self, solution_dirs: list[str]) -> None:
        self.solution_dirs = tuple(os.path.realpath(d) + os.sep for d in solution_dirs)
        self.findings: list[DispatchTraceEvaded] = []
        for owner, name in WRAPPED:
            original = getattr(owner, name, None)
            if original is not None:
                setattr(owner, name, self._wrap(name, original))

    def _wrap(self, name, original):
        tripwires = self

        def tripwire(*args, **kwargs):
            caller = sys._getframe(1)
            if caller.f_code.co_filename.startswith(tripwires.solution_dirs):
                tripwires.findings.append(
                    DispatchTraceEvaded(f"{name} called from {caller.f_code.co_filename}")
                )
            return original(*args, **kwargs)

        tripwire.__wrapped__ = original
        return tripwire

    def raise_first(self) -> None:
        if self.findings:
            raise self.findings[0]
