"""Read and write the safetensors format (a JSON header, then raw little-endian tensor bytes),
so captured fixtures load in other tools without the project depending on another package.

Tensors are written row-major; a layout with other strides is described beside the file.
"""

import json
import struct
from pathlib import Path
from typing import NamedTuple

import torch

from operators.errors import OperatorError

DTYPE_CODES = {
    torch.float64: "F64",
    torch.float32: "F32",
    torch.float16: "F16",
    torch.bfloat16: "BF16",
    torch.float8_e4m3fn: "F8_E4M3",
    torch.float8_e5m2: "F8_E5M2",
    torch.int64: "I64",
    torch.int32: "I32",
    torch.int16: "I16",
    torch.int8: "I8",
    torch.uint8: "U8",
    torch.bool: "BOOL",
}
DTYPES_BY_CODE = {code: dtype for dtype, code in DTYPE_CODES.items()}
HEADER_ALIGNMENT = 8
LARGEST_HEADER = 100 << 20
"""A header length past this is not a safetensors file (the format caps it at 100 MB)."""


class TensorHeader(NamedTuple):
    """One tensor as a safetensors header describes it: no data."""

    name: str
    dtype: torch.dtype
    shape: tuple[int, ...]


def read_header(path: Path) -> tuple[list[TensorHeader], dict[str, str]]:
    """The tensors (name, dtype, shape) and metadata of a safetensors file, from its header
    alone: the 8-byte length and the JSON after it are the only bytes read."""
    with open(path, "rb") as stream:
        prefix = stream.read(8)
        if len(prefix) < 8:
            raise OperatorError(f"{path}: not a safetensors file (shorter than its 8-byte length)")
        (length,) = struct.unpack("<Q", prefix)
        if length > LARGEST_HEADER:
            raise OperatorError(
                f"{path}: not a safetensors file (a header of {length} bytes; at most 100 MB)"
            )
        raw = stream.read(length)
    if len(raw) < length:
        raise OperatorError(
            f"{path}: truncated safetensors header ({len(raw)} of {length} bytes present)"
        )
    try:
        header = json.loads(raw)
    except ValueError as error:
        raise OperatorError(f"{path}: not a safetensors file (header: {error})") from None
    if not isinstance(header, dict):
        raise OperatorError(f"{path}: not a safetensors file (the header is not an object)")
    metadata = header.pop("__metadata__", None) or {}
    return [_tensor_header(path, name, entry) for name, entry in header.items()], metadata


def _tensor_header(path: Path, name: str, entry) -> TensorHeader:
    try:
        code, shape, (begin, end) = entry["dtype"], entry["shape"], entry["data_offsets"]
        shape = tuple(int(size) for size in shape)
    except (KeyError, TypeError, ValueError):
        raise OperatorError(
            f"{path}: tensor {name!r} needs dtype, shape and data_offsets in the header"
        ) from None
    dtype = DTYPES_BY_CODE.get(code)
    if dtype is None:
        raise OperatorError(
            f"{path}: tensor {name!r} has dtype {code!r}, which this runtime cannot make; "
            f"known: {', '.join(DTYPES_BY_CODE)}"
        )
    numel = 1
    for size in shape:
        numel *= size
    if min(shape, default=0) < 0 or end - begin != numel * dtype.itemsize:
        raise OperatorError(
            f"{path}: tensor {name!r} of shape {list(shape)} {code} does not fit its "
            f"data_offsets [{begin}, {end}]"
        )
    return TensorHeader(name, dtype, shape)


def save_tensors(path: Path, tensors: dict[str, torch.Tensor], metadata: dict | None = None):
    """Write `tensors` (any device and layout) to `path` as one safetensors file."""
    header: dict = {"__metadata__": {k: str(v) for k, v in (metadata or {}).items()}}
    chunks, offset = [], 0
    for name in sorted(tensors):
        tensor = tensors[name].detach().to("cpu").contiguous()
        if tensor.dtype not in DTYPE_CODES:
            raise OperatorError(f"fixture {name!r}: dtype {tensor.dtype} has no safetensors code")
        data = tensor.reshape(-1).view(torch.uint8).numpy().tobytes() if tensor.numel() else b""
        header[name] = {
            "dtype": DTYPE_CODES[tensor.dtype],
            "shape": list(tensor.shape),
            "data_offsets": [offset, offset + len(data)],
        }
        chunks.append(data)
        offset += len(data)
    encoded = json.dumps(header, separators=(",", ":")).encode()
    encoded += b" " * (-len(encoded) % HEADER_ALIGNMENT)
    Path(path).write_bytes(struct.pack("<Q", len(encoded)) + encoded + b"".join(chunks))


def load_tensors(path: Path) -> dict[str, torch.Tensor]:
    """Every tensor of a safetensors file, on the CPU, row-major."""
    raw = Path(path).read_bytes()
    try:
        (length,) = struct.unpack("<Q", raw[:8])
        header = json.loads(raw[8 : 8 + length])
    except (struct.error, ValueError) as error:
        raise OperatorError(f"{path} is not a safetensors file: {error}") from None
    body = raw[8 + length :]
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        dtype = DTYPES_BY_CODE.get(entry["dtype"])
        if dtype is None:
            raise OperatorError(f"{path}: tensor {name!r} has unknown dtype {entry['dtype']}")
        begin, end = entry["data_offsets"]
        if end == begin:
            tensors[name] = torch.empty(entry["shape"], dtype=dtype)
            continue
        flat = torch.frombuffer(bytearray(body[begin:end]), dtype=torch.uint8)
        tensors[name] = flat.view(dtype).reshape(entry["shape"]).clone()
    return tensors
