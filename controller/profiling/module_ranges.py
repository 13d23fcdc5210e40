"""Profiler ranges around every module call, so work can be attributed to the module (layer
indices folded) that ran it."""

import re
from collections.abc import Iterator
from contextlib import contextmanager

import torch


@contextmanager
def label_module_calls() -> Iterator[None]:
    """Wrap each module call in a `module:<path>` range, its path from the outermost module
    called and layer indices folded (`layers.3.mlp` reads `layers.*.mlp`)."""
    open_ranges: list = []
    names: dict[int, str] = {}

    def before(module, _inputs):
        if not open_ranges:
            names.clear()
            root = type(module).__name__
            for name, child in module.named_modules():
                path = f"{root}.{name}" if name else root
                names[id(child)] = re.sub(r"\.\d+(?=\.|$)", ".*", path)
        label = names.get(id(module), type(module).__name__)
        labelled = torch.profiler.record_function(f"module:{label}")
        labelled.__enter__()
        open_ranges.append(labelled)

    def after(_module, _inputs, _output):
        if open_ranges:
            open_ranges.pop().__exit__(None, None, None)

    pre = torch.nn.modules.module.register_module_forward_pre_hook(before)
    post = torch.nn.modules.module.register_module_forward_hook(after)
    try:
        yield
    finally:
        pre.remove()
        post.remove()
        while open_ranges:
            open_ranges.pop().__exit__(None, None, None)
