"""Torch's (and Triton's) own answers to "am I judged?" and "how many calls so far?": reads a
kernel has no use for, refused by name because `torch` and `triton` themselves are on the
import allow-list (`source_imports.py`).

The allocator's counters rise with every allocation of the process, so they count calls; the
generators' state and offsets advance with every random draw; capture, compile, trace, profile
and dispatch-mode state and the current stream's identity tell a judge's harness from a user's
model; NVML's readings, the thread settings and the device's identity tell one host or GPU from
another. `torch._C` is the second name of every one of them. Triton's `knobs` read the
environment, its `runtime` holds the driver (device, stream) and its `testing` the timers.
"""

ALLOCATOR_COUNTERS = (
    "memory_allocated",
    "max_memory_allocated",
    "memory_reserved",
    "max_memory_reserved",
    "memory_cached",
    "max_memory_cached",
    "memory_stats",
    "memory_stats_as_nested_dict",
    "memory_summary",
    "memory_snapshot",
    "mem_get_info",
    "host_memory_stats",
    "reset_peak_memory_stats",
    "reset_max_memory_allocated",
    "reset_accumulated_memory_stats",
)
DEVICE_MONITORS = (
    "utilization",
    "temperature",
    "clock_rate",
    "power_draw",
    "memory_usage",
    "list_gpu_processes",
    "device_memory_used",
)
RNG_POSITION = (
    "get_rng_state",
    "get_rng_state_all",
    "initial_seed",
    "seed",
    "seed_all",
    "get_state",
    "get_offset",
    "graphsafe_get_state",
    "default_generator",
    "default_generators",
)
HARNESS_STATE = (
    "is_current_stream_capturing",
    "is_compiling",
    "is_dynamo_compiling",
    "is_exporting",
    "is_tracing",
    "is_fx_tracing",
    "is_in_onnx_export",
    "_get_current_dispatch_mode",
    "_get_current_dispatch_mode_stack",
    "_get_current_function_mode",
    "_get_current_function_mode_stack",
    "_len_torch_dispatch_stack",
    "_len_torch_function_stack",
    "is_torch_function_mode_enabled",
    "_is_torch_function_mode_enabled",
    "_is_profiler_enabled",
    "profiler",
    "_dynamo",
    "_guards",
    "distributed",
    "get_worker_info",
    "current_stream",
    "default_stream",
    "current_blas_handle",
)
PROCESS_AND_DEVICE = (
    "get_num_threads",
    "get_num_interop_threads",
    "are_deterministic_algorithms_enabled",
    "is_deterministic_algorithms_warn_only_enabled",
    "get_deterministic_debug_mode",
    "device_count",
    "uuid",
    "pci_bus_id",
    "pci_device_id",
    "pci_domain_id",
    "from_file",  # a file's bytes as a tensor: `/proc/self/stat` without `open`
    "_C",
)
TRITON_STATE = ("knobs", "runtime", "testing")
TORCH_PROBED_NAMES = frozenset(
    ALLOCATOR_COUNTERS
    + DEVICE_MONITORS
    + RNG_POSITION
    + HARNESS_STATE
    + PROCESS_AND_DEVICE
    + TRITON_STATE
)
"""Attribute names (and names imported from torch or triton) a solution's sources may not
read."""

TORCH_WRAPPED = {
    "torch": ("get_rng_state", "initial_seed", "seed"),
    "torch.random": ("get_rng_state", "initial_seed", "seed"),
    "torch.cuda": ALLOCATOR_COUNTERS
    + DEVICE_MONITORS
    + ("get_rng_state", "get_rng_state_all", "initial_seed", "seed", "seed_all"),
    "torch.cuda.memory": ALLOCATOR_COUNTERS + ("list_gpu_processes",),
    "torch.cuda.random": ("get_rng_state", "get_rng_state_all", "initial_seed", "seed", "seed_all"),
}
"""The reads also recorded at run time (a name no literal shows still reaches them): plain
Python functions that torch's compiler, CUDA graphs and Triton's launcher do not call on the
hot path. Capture, compile and stream queries are left unwrapped: the compiler recognises them
by identity and Triton asks for the stream on every launch."""
