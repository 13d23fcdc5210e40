"""Drivers for `capture-ops` and `profile` on the bundled example: the model and inputs are
built once per process, so every step is one forward pass and nothing else."""

import functools

import torch

from examples.config import SIZES
from examples.model import build_model, make_inputs
from operators.triton_runtime import default_device


@functools.cache
def _prepared(size: str, batch: int, seed: int):
    device = default_device()
    return build_model(SIZES[size], seed, device), make_inputs(SIZES[size], batch, seed, device)


def forward(size: str = "tiny", batch: int = 1, seed: int = 0) -> dict[str, torch.Tensor]:
    """One forward pass (prefix, then every denoise step) of the example at `size`."""
    model, inputs = _prepared(size, batch, seed)
    return model(inputs)
