"""Fallback to PyTorch (or host) compute instead of a kernel.

The candidate's call is traced at the ATen level; only allocation, view, metadata and
same-dtype copy ops may come from its own code (plus the BLAS products, where the task allows
them, and any other op the task allows). Host compute
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
LIBRARY_PRODUCTS = frozenset({"mm", "addmm", "bmm", "baddbmm"})
"""The BLAS products (what `linear` and `matmul` become) a candidate may call on operands it
prepares, where its task allows them (`library_products`); each call is listed in the
evidence with its shapes. Every other ATen compute stays refused."""
ALWAYS_ALLOWED = ALLOCATION_OPS | VIEW_OPS | METADATA_OPS
HOST_TRANSFER_METHODS = frozenset(
    {"numpy", "tolist", "item", "from_numpy", "__array__", "frombuffer", "asarray"}
)


class TorchComputeFallback(CheatDetected):
    """The candidate computed with PyTorch ops (arithmetic, reductions, casts), not a kernel."""


class ImportTimeCompute(CheatDetected):
    """The solution ran tensor compute while being imported, e.g. to precompute answers."""


class HostComputeFallback(CheatDetected):
    """The candidate moved data to the host (NumPy, lists, DLPack, raw addresses, tensors over
    memory torch did not allocate) and computed there."""


class OpPolicy:
    """What the candidate may run, copied before the solution is imported.

    The tracers only record facts about each op; the verdict is taken after the call from
    this copy, so an allow-list the solution widens during its call (a module global, the
    active tracer's attributes) and restores before returning changes nothing.
    """

    __slots__ = ("_allowed", "_copies", "_bench_code", "_launch_code", "_host_reads")

    def __init__(self, extra: frozenset[str], launch_code=frozenset(), bench_code=frozenset()):
        self._allowed = frozenset(ALWAYS_ALLOWED) | frozenset(extra)
        self._copies = frozenset(LAYOUT_COPY_OPS)
        self._launch_code = frozenset(launch_code)
        self._bench_code = frozenset(bench_code)
        self._host_reads = frozenset(HOST_READ_FUNCTIONS)

    def op_allowed(self, fact) -> bool:
        """True for an op that only allocates, views, describes or copies values unchanged."""
        if fact.name in self._allowed:
            return True
        if fact.name == "fill_":
            return fact.overload == "Scalar"
        return fact.name in self._copies and fact.keeps_values

    def issuer(self, fact) -> str:
        """`bench` (Triton's benchmarking), `triton` (its launcher) or `candidate`."""
        if any(code in self._bench_code for code in fact.library_code):
            return "bench"
        if any(code in self._launch_code for code in fact.library_code):
            return "triton"
        return "candidate"

    def disallowed(self, facts) -> list[str]:
        """Ops that compute, by the candidate or by anything Triton's launcher ran for it (a
        launch hook); Triton's own benchmarking may compute."""
        found = []
        for fact in facts:
            issuer = self.issuer(fact)
            if issuer == "bench" or (issuer == "triton" and fact.name in TRITON_LAUNCH_OPS):
                continue
            if not self.op_allowed(fact):
                found.append(
                    fact.label + (" (run from Triton's launcher)" if issuer == "triton" else "")
                )
        return found

    def host_reads(self, calls: list[str]) -> list[str]:
        """Torch functions that hand tensor memory to the host (`tolist`, `numpy`, DLPack),
        by any caller."""
        return [f"torch {name}" for name in calls if name in self._host_reads]


# What Triton's interpreter runs on the arguments of a launch (host views of their storages).
TRITON_LAUNCH_OPS = frozenset({"set_"})
# Torch functions that expose a tensor's values or memory to Python: no honest launch needs
# them, and Triton's launcher calls none of them.
HOST_READ_FUNCTIONS = frozenset({"tolist", "numpy", "__array__", "__dlpack__"})


def copy_keeps_values(name, args, kwargs) -> bool:
    """True when a copy op changes neither the dtype nor the device of its values."""
    import torch

    if name in ("clone", "contiguous"):
        return True
    if name == "copy_":
        if len(args) < 2 or not isinstance(args[0], torch.Tensor):
            return False
        target, source = args[0], args[1]
        return (
            isinstance(source, torch.Tensor)
            and source.dtype == target.dtype
            and source.device == target.device
        )
    source = args[0] if args else None
    if not isinstance(source, torch.Tensor):
        return False
    dtype = kwargs.get("dtype")
    device = kwargs.get("device")
    same_dtype = dtype is None or dtype == source.dtype
    same_device = device is None or torch.device(device) == source.device
    return same_dtype and same_device
