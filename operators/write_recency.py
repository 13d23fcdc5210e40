"""Which tensors the model had just written when an operator was called: the producing op's
output is still in the L2 when its consumer runs, so a captured call whose inputs were just
written is timed warm, one that reads older tensors (a cache, the residual stream) cold.

`WriteRecency` watches every ATen op of the captured steps (a dispatch mode) and remembers,
per storage, when an op last wrote it; views write nothing. A registry call's inputs were just
written when most of their bytes were written since the previous registry call returned (its
outputs included): by the ops that produced them for this call.
"""

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves


def storage_key(tensor: torch.Tensor) -> tuple:
    storage = tensor.untyped_storage()
    return (str(tensor.device), storage.data_ptr(), storage.nbytes())


class WriteRecency(TorchDispatchMode):
    """A dispatch mode that stamps each storage an op writes with a rising sequence number;
    the ops inside a registry call are not watched (only its outputs count, as written when
    it returns), so a kernel that touches its arguments cannot make them look fresh."""

    def __init__(self) -> None:
        super().__init__()
        self.sequence = 0
        self.boundary = 0
        self.depth = 0  # registry calls in progress
        self._written: dict[tuple, int] = {}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        result = func(*args, **(kwargs or {}))
        if not self.depth and not func.is_view:
            self.mark(tree_leaves(result))
        return result

    def mark(self, values) -> None:
        """Stamp the storages of `values` (tensors; anything else is skipped) as written now."""
        self.sequence += 1
        for value in values:
            if isinstance(value, torch.Tensor) and value.untyped_storage().nbytes():
                self._written[storage_key(value)] = self.sequence

    def call_started(self, inputs: list[torch.Tensor]) -> bool:
        """A registry call begins: whether most of its inputs' bytes were written since the
        previous one returned. Ops are not watched until it returns."""
        fresh = stale = 0
        for tensor in inputs:
            size = tensor.numel() * tensor.element_size()
            if self._written.get(storage_key(tensor), -1) >= self.boundary:
                fresh += size
            else:
                stale += size
        self.depth += 1
        return fresh > stale

    def call_finished(self, outputs) -> None:
        """A registry call returned: its outputs are the newest writes, and what is written
        from here on is written for the next call."""
        self.depth -= 1
        self.mark(tree_leaves(outputs))
        self.boundary = self.sequence
