"""Fallback to PyTorch (or host) compute instead of a kernel.

The candidate's call is traced at the ATen level; only allocation, view, metadata and
same-dtype copy ops may come from its own code (plus any the task allows). Host compute
through NumPy or Python lists is seen by a profile hook on the candidate's own frames.
"""

from gates.evaluator.detectors import CheatDetected

ALLOCATION_OPS = frozenset(
    {
        "empty",
        "empty_like",
        "empty_strided",
        "new_empty",
        "new_empty_strided",
        "zeros",
        "zeros_like",
        "new_zeros",
        "zero_",
        "ones",
        "ones_like",
        "new_ones",
        "full",
        "full_like",
        "new_full",
        "scalar_tensor",
        "lift_fresh",
        "lift_fresh_copy",
        "resize_",
        "record_stream",
    }
)
VIEW_OPS = frozenset(
    {
        "view",
        "_unsafe_view",
        "_reshape_alias",
        "as_strided",
        "t",
        "transpose",
        "permute",
        "expand",
        "unsqueeze",
        "squeeze",
        "select",
        "slice",
        "narrow",
        "unbind",
        "split",
        "split_with_sizes",
        "chunk",
        "detach",
        "alias",
        "unflatten",
        "flatten",
        "view_as",
        "reshape",
        "movedim",
    }
)
METADATA_OPS = frozenset(
    {
        "sym_size",
        "sym_stride",
        "sym_numel",
        "sym_storage_offset",
        "size",
        "stride",
        "dim",
        "numel",
        "is_contiguous",
        "is_same_size",
        "is_non_overlapping_and_dense",
    }
)
LAYOUT_COPY_OPS = frozenset({"clone", "copy_", "_to_copy", "contiguous"})
ALWAYS_ALLOWED = ALLOCATION_OPS | VIEW_OPS | METADATA_OPS
HOST_TRANSFER_METHODS = frozenset(
    {"numpy", "tolist", "item", "from_numpy", "__array__", "frombuffer", "asarray"}
)


class TorchComputeFallback(CheatDetected):
    """The candidate computed with PyTorch ops (arithmetic, reductions, casts), not a kernel."""

    detector = "compute_fallback"


class ImportTimeCompute(CheatDetected):
    """The solution ran tensor compute while being imported, e.g. to precompute answers."""

    detector = "compute_fallback"


class HostComputeFallback(CheatDetected):
    """The candidate moved data to the host (NumPy, lists, .item()) and computed there."""

    detector = "compute_fallback"


def is_allowed_op(name: str, overload: str, args, kwargs, extra: frozenset[str]) -> bool:
    """True for ops that only allocate, view, describe or copy without changing values."""
    if name in ALWAYS_ALLOWED or name in extra:
        return True
    if name == "fill_":
        return overload == "Scalar"
    if name in LAYOUT_COPY_OPS:
        return _copy_keeps_values(name, args, kwargs)
    return False


def _copy_keeps_values(name, args, kwargs) -> bool:
    import torch

    if name in ("clone", "contiguous"):
        return True
    if name == "copy_":
        target, source = args[0], args[1]
        return (
            isinstance(source, torch.Tensor)
            and source.dtype == target.dtype
            and source.device == target.device
        )
    source = args[0]
    dtype = kwargs.get("dtype")
    device = kwargs.get("device")
    same_dtype = dtype is None or dtype == source.dtype
    same_device = device is None or torch.device(device) == source.device
    return same_dtype and same_device
