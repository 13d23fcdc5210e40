"""`controller skeleton`: a checkpoint with a model's tensor names, dtypes and shapes and
random values, made from the headers of its safetensors files alone.

The shapes of a model's operator calls do not depend on its weight values, so a skeleton
captures the same layouts and call counts as the real checkpoint: a model whose weights are
too large, licensed or elsewhere can be tuned for here. No tensor data of a source is read.
Values are drawn per tensor from a seed and the tensor's name (so a file's values do not
depend on the order or the other files), scaled so activations stay finite: matrices
N(0, 1/fan_in), vectors N(0, 0.01); integer and boolean tensors are zeros.
"""

import datetime
import hashlib
from pathlib import Path

import torch
from pydantic import BaseModel, ConfigDict, Field

from controller.errors import ControllerError
from operators.errors import OperatorError
from operators.safetensors_file import TensorHeader, read_header, save_tensors

RECORD_FILE = "skeleton.json"
VECTOR_SPREAD = 0.1
"""The standard deviation of a drawn vector (norm weights, biases)."""


class SkeletonFile(BaseModel):
    """One source file and the skeleton written for it."""

    model_config = ConfigDict(frozen=True)

    source: str
    source_header_sha256: str = Field(description="digest of the source's header bytes")
    output: str
    tensors: int
    bytes: int


class SkeletonRecord(BaseModel):
    """What `skeleton.json` records: the seed, each file, and when it was made."""

    model_config = ConfigDict(frozen=True)

    seed: int
    created: str
    files: list[SkeletonFile]


def make_skeleton(sources: list[Path], output: Path, seed: int) -> SkeletonRecord:
    """Write one random-weight file per source into `output`, and `skeleton.json`."""
    names = [source.name for source in sources]
    if len(set(names)) != len(names):
        raise ControllerError(f"checkpoint files {names}: give files with different names")
    headers = []
    for source in sources:
        if not source.is_file():
            raise ControllerError(f"{source}: no such file; give .safetensors files")
        try:
            headers.append(read_header(source))
        except OperatorError as error:
            raise ControllerError(str(error)) from None
    output.mkdir(parents=True, exist_ok=True)
    files = []
    for source, (tensors, _) in zip(sources, headers, strict=True):
        values = {tensor.name: _random_tensor(tensor, seed) for tensor in tensors}
        target = output / source.name
        save_tensors(target, values, {"skeleton_of": source.name, "seed": seed})
        files.append(
            SkeletonFile(
                source=str(source),
                source_header_sha256=_header_digest(source),
                output=str(target),
                tensors=len(values),
                bytes=sum(v.numel() * v.element_size() for v in values.values()),
            )
        )
    record = SkeletonRecord(
        seed=seed,
        created=datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        files=files,
    )
    (output / RECORD_FILE).write_text(record.model_dump_json(indent=2) + "\n")
    return record


def _random_tensor(tensor: TensorHeader, seed: int) -> torch.Tensor:
    if not (tensor.dtype.is_floating_point or tensor.dtype.is_complex):
        return torch.zeros(tensor.shape, dtype=tensor.dtype)
    name_seed = int.from_bytes(hashlib.sha256(f"{seed}:{tensor.name}".encode()).digest()[:7])
    generator = torch.Generator().manual_seed(name_seed)
    values = torch.randn(tensor.shape, generator=generator, dtype=torch.float32)
    spread = (
        tensor.shape[-1] ** -0.5 if len(tensor.shape) >= 2 and tensor.shape[-1] else VECTOR_SPREAD
    )
    return (values * spread).to(tensor.dtype)


def _header_digest(source: Path) -> str:
    with open(source, "rb") as stream:
        length = int.from_bytes(stream.read(8), "little")
        return hashlib.sha256(stream.read(length)).hexdigest()
