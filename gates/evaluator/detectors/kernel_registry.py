"""Replacing an ATen kernel from Python (`torch.library.Library("aten", "IMPL")`).

A Python kernel registered for an op runs below the dispatch mode: the trace sees only the
op it replaced. Registered for an op the trace allows (`alias`, `copy_`), it can compute the
answer unseen; registered for an op the evaluator itself uses between calls (the copies of
the outputs, the digests, the timing comparisons), it can change what the evaluator reads.
The dispatcher's table for those ops is taken once the evaluator has warmed up (before the
solution is imported) and compared with every environment check; the profiler layer
(`AtenRecorder`) also names arithmetic found inside an op that only moves data.
"""

import torch

from gates.evaluator.detectors import CheatDetected
from gates.evaluator.detectors.compute_fallback import ALWAYS_ALLOWED, LAYOUT_COPY_OPS

# What the candidate process runs on tensors besides the solution: input copies, poisoning,
# output copies and digests, the timing loop's resets, flushes and comparisons.
EVALUATOR_OPS = frozenset(
    {
        "to", "fill_", "zero_", "zeros", "ones", "set_", "empty_strided", "_local_scalar_dense",
        "ne", "eq", "le", "lt", "ge", "gt", "any", "all", "logical_not", "logical_not_", "abs",
        "abs_", "sub", "add", "add_", "mul", "mul_", "stack", "cat", "unbind", "isnan",
        "isfinite", "sum", "max", "min", "randn", "rand", "normal_", "uniform_", "cos", "sin",
        "lift_fresh", "resolve_conj", "resolve_neg", "item",
    }
)  # fmt: skip
WATCHED_OPS = ALWAYS_ALLOWED | LAYOUT_COPY_OPS | EVALUATOR_OPS


class KernelReplaced(CheatDetected):
    """A kernel of an ATen op was registered or replaced while the solution ran."""


class KernelRegistry:
    """The dispatcher's registrations for the watched ops (every overload), as text."""

    def __init__(self, watched: frozenset[str] = WATCHED_OPS) -> None:
        self._names = [
            name
            for name in torch._C._dispatch_get_all_op_names()
            if name.startswith("aten::") and name[6:].split(".")[0] in watched
        ]
        self._tables = [torch._C._dispatch_dump(name) for name in self._names]

    def changed(self, dump=torch._C._dispatch_dump) -> list[str]:
        """The ops whose registrations differ now."""
        return [
            name
            for name, table in zip(self._names, self._tables, strict=True)
            if dump(name) != table
        ]
