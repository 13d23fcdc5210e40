"""Drivers for `capture-ops` and `profile` on the bundled example: the model and inputs are
built once per process, so every step is one forward pass and nothing else."""

import functools
from pathlib import Path

import torch

from examples.config import SIZES
from examples.model import build_model, make_inputs
from operators.triton_runtime import default_device


@functools.cache
def _prepared(size: str, batch: int, seed: int, checkpoint: tuple[str, ...] = ()):
    device = default_device()
    files = [Path(path) for path in checkpoint] or None
    model = build_model(SIZES[size], seed, device, checkpoint=files)
    return model, make_inputs(SIZES[size], batch, seed, device)


def forward(
    size: str = "tiny", batch: int = 1, seed: int = 0, *checkpoint: str
) -> dict[str, torch.Tensor]:
    """One forward pass (prefix, then every denoise step) of the example at `size`; weights
    from the safetensors files `checkpoint` when given (a real one, or a skeleton)."""
    model, inputs = _prepared(size, batch, seed, tuple(str(path) for path in checkpoint))
    return model(inputs)


def forward_batches(size: str = "tiny", batches: tuple | str = (1, 8), seed: int = 0) -> None:
    """One forward at each of `batches` (`1,8` on the command line): a capture of this step
    holds the layouts of every batch a profile is tuned for, each call counted once per batch."""
    values = batches if isinstance(batches, tuple | list) else str(batches).split(",")
    for batch in values:
        forward(size, int(batch), seed)
