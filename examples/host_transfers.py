"""Host work inside a forward pass: what keeps it out of a CUDA graph.

A CUDA graph replays device work only, so a table built on the host and copied over, or a
device value read back by the host, either breaks capture or is frozen into the graph.
`HostTransfers` watches every ATen call of a forward and records each one that moves data
between the host (CPU) and the model's device, or reads a device value on the host. Run on
the `meta` device it checks a model on a machine without a GPU: every CPU tensor that reaches
a meta one is a copy that would cross to the GPU.
"""

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

HOST_READS = frozenset({"aten._local_scalar_dense.default", "aten.item.default"})


class HostTransfers(TorchDispatchMode):
    """Records `op: from -> to` for every ATen call that crosses between host and `device`."""

    def __init__(self, device: torch.device | str) -> None:
        super().__init__()
        self.device = torch.device(device)
        self.seen: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        result = func(*args, **kwargs)
        inputs = _devices(tree_leaves((args, kwargs)))
        outputs = _devices(tree_leaves(result))
        name = str(func)
        if name in HOST_READS and self.device.type in inputs:
            self.seen.append(f"{name}: {self.device.type} value read on the host")
        elif "cpu" in inputs and self.device.type in outputs and self.device.type != "cpu":
            self.seen.append(f"{name}: cpu -> {self.device.type}")
        elif self.device.type in inputs and "cpu" in outputs and self.device.type != "cpu":
            self.seen.append(f"{name}: {self.device.type} -> cpu")
        return result


def _devices(values) -> set[str]:
    return {value.device.type for value in values if isinstance(value, torch.Tensor)}
