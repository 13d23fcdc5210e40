"""The example model's weights as a safetensors checkpoint, so it loads like a real model and
can be captured from a checkpoint made of headers alone (`controller skeleton`)."""

from pathlib import Path

import torch

from operators.errors import OperatorError
from operators.safetensors_file import load_tensors, save_tensors


def save_checkpoint(model: torch.nn.Module, path: Path) -> None:
    """Every parameter of `model`, by its state-dict name, in one safetensors file."""
    save_tensors(path, dict(model.state_dict()), {"format": "pt"})


def load_checkpoint(model: torch.nn.Module, paths: list[Path]) -> None:
    """Replace `model`'s parameters with the tensors of `paths` (one or more files), which
    must name every parameter with its dtype and shape, and nothing else."""
    tensors: dict[str, torch.Tensor] = {}
    for path in paths:
        tensors.update(load_tensors(path))
    expected = model.state_dict()
    missing = sorted(set(expected) - set(tensors))
    unexpected = sorted(set(tensors) - set(expected))
    if missing or unexpected:
        raise OperatorError(
            f"checkpoint {', '.join(map(str, paths))}: missing {missing[:3]}, unexpected "
            f"{unexpected[:3]}; give a checkpoint of this model size"
        )
    for name, tensor in tensors.items():
        want = expected[name]
        if tensor.dtype != want.dtype or tensor.shape != want.shape:
            raise OperatorError(
                f"checkpoint tensor {name!r}: {tensor.dtype} {list(tensor.shape)}, the model "
                f"has {want.dtype} {list(want.shape)}"
            )
    model.load_state_dict(tensors, strict=True)
