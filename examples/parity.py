"""Parity configurations: fixed-seed runs of the tiny model whose outputs gates compare.

`pyproject.toml` names these drivers under `[tool.controller] parity_configurations`. They
run under whatever kernel profile the caller made active and never choose one themselves.
"""

import torch

from examples.config import TINY
from examples.model import run_example
from operators.triton_runtime import default_device

PARITY_SEED = 0


def tiny_batch1() -> dict[str, torch.Tensor]:
    """The tiny model at batch 1: one request, as a robot runs it."""
    return run_example(TINY, batch=1, seed=PARITY_SEED, device=default_device())


def tiny_batch8() -> dict[str, torch.Tensor]:
    """The tiny model at batch 8, so batch-dependent kernel paths are exercised too."""
    return run_example(TINY, batch=8, seed=PARITY_SEED, device=default_device())


def tiny(batch: int, seed: int) -> dict[str, torch.Tensor]:
    """The tiny model at any batch and seed; the controller draws hidden configurations here."""
    return run_example(TINY, batch=batch, seed=seed, device=default_device())
