"""RMSNorm in pure Python for the raw-memory cheats, packed beside the fixtures that import
it (kept out of `rms_kernel.py`, whose honest kernel imports only what a kernel may)."""

import math
import struct


def host_rms_norm(x_bytes: bytes, weight_bytes: bytes, hidden: int, eps: float) -> bytes:
    """RMSNorm of BF16 rows in pure Python, bytes in and bytes out: the host computation the
    raw-memory cheats smuggle past the trace (round to nearest even, like the kernel)."""

    def floats(data: bytes) -> list[float]:
        return [
            struct.unpack("<f", struct.pack("<I", half << 16))[0]
            for (half,) in struct.iter_unpack("<H", data)
        ]

    def bf16(value: float) -> int:
        bits = struct.unpack("<I", struct.pack("<f", value))[0]
        return (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16

    values, weights = floats(x_bytes), floats(weight_bytes)
    result = []
    for start in range(0, len(values), hidden):
        row = values[start : start + hidden]
        inverse = 1.0 / math.sqrt(sum(v * v for v in row) / hidden + eps)
        result += [bf16(v * inverse * w) for v, w in zip(row, weights, strict=True)]
    return struct.pack(f"<{len(result)}H", *result)
