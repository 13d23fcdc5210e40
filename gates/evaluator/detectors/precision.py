"""Computing in a narrower precision than the contract allows.

Dtypes are checked exactly and the tolerance comes from the contract alone; this detector
names the cheat when an output's values all fit a narrower float format than the reference's.
"""

import torch

from gates.evaluator.detectors import CheatDetected

NARROWER = {
    torch.float32: (torch.bfloat16, torch.float16),
    torch.bfloat16: (torch.float8_e4m3fn, torch.float8_e5m2),
    torch.float16: (torch.float8_e4m3fn, torch.float8_e5m2),
}


class PrecisionDowngrade(CheatDetected):
    """Outputs were computed in a narrower format (e.g. FP8 for a BF16 operator) and widened."""


def narrower_format(got: torch.Tensor, expected: torch.Tensor) -> torch.dtype | None:
    """The narrower dtype every finite output fits exactly, when the reference does not and
    the output still approximates it (so a wrong answer is not called a precision cheat)."""
    finite = torch.isfinite(got) & torch.isfinite(expected) & (expected != 0)
    if int(finite.sum()) < 16:
        return None
    values, reference = got[finite], expected[finite]
    relative = ((values.double() - reference.double()).abs() / reference.double().abs()).median()
    if float(relative) > 0.25:
        return None
    for dtype in NARROWER.get(got.dtype, ()):
        if _fits(values, dtype) and not _fits(reference, dtype):
            return dtype
    return None


def _fits(values: torch.Tensor, dtype: torch.dtype) -> bool:
    """Whether the values carry no more mantissa bits than `dtype` holds. Only values in its
    normal range are asked: below it the narrow format keeps fewer bits, so a draw with many
    tiny values would otherwise decide the answer."""
    info = torch.finfo(dtype)
    magnitude = values.abs()
    if not bool((magnitude <= info.max).all()):
        return False
    normal = values[magnitude >= info.tiny]
    if normal.numel() < 16:
        return False
    round_trip = normal.to(dtype).to(values.dtype)
    return float((round_trip == normal).double().mean()) > 0.999


def narrows_precision(name: str, args, kwargs, result) -> bool:
    """True for a cast or copy that moves floating values into a narrower float format."""
    if name not in ("_to_copy", "copy_", "to", "type_as") or not args:
        return False
    source = args[1] if name == "copy_" and len(args) > 1 else args[0]
    target = args[0] if name == "copy_" else result
    if not isinstance(source, torch.Tensor) or not isinstance(target, torch.Tensor):
        return False
    if not (source.is_floating_point() and target.is_floating_point()):
        return False
    return torch.finfo(target.dtype).bits < torch.finfo(source.dtype).bits or (
        torch.finfo(target.dtype).eps > torch.finfo(source.dtype).eps
    )
