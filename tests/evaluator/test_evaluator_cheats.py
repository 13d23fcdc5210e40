"""Every cheat class the CPU can show is rejected, with the detector that names it."""

import pytest
from cheat_packing import cheat_solution
from evaluation_jobs import evaluate_many

# fixture file -> (expected status, expected detector or None)
CPU_CHEATS = {
    "torch_fallback": ("REJECTED", "compute_fallback"),
    "functional_fallback": ("REJECTED", "compute_fallback"),
    "host_compute": ("REJECTED", "compute_fallback"),
    "import_compute": ("REJECTED", "compute_fallback"),
    "dispatch_disable": ("REJECTED", "compute_fallback"),
    "tls_exclude": ("REJECTED", "compute_fallback"),
    "alias_pop": ("REJECTED", "compute_fallback"),
    "closure_pop": ("REJECTED", "compute_fallback"),
    "child_process": ("REJECTED", "concurrency"),
    "thread_offload": ("REJECTED", "concurrency"),
    "narrow_inputs": ("REJECTED", "precision"),
    "shape_memo": ("REJECTED", "output_replay"),
    "kept_buffer": ("REJECTED", "output_replay"),
    "aliased_output": ("REJECTED", "output_replay"),
    "batch_broadcast": ("REJECTED", "batch_skipping"),
    "batch_truncated": ("REJECTED", "batch_skipping"),
    "input_mutation": ("REJECTED", "input_mutation"),
    "stale_memory": ("REJECTED", "uninitialised_memory"),
    "subclass_output": ("REJECTED", "tensor_types"),
    "background_thread": ("REJECTED", "concurrency"),
    "timer_patch": ("REJECTED", "tampering"),
    "evaluator_patch": ("REJECTED", "tampering"),
    "heap_walk": ("REJECTED", "introspection"),
    "frame_walk": ("REJECTED", "introspection"),
    "request_reader": ("REJECTED", "introspection"),
    "dynamic_code": ("REJECTED", "introspection"),
    "native_library": ("REJECTED", "introspection"),
    "ctypes_compute": ("REJECTED", "introspection"),
    "proc_mem_compute": ("REJECTED", "introspection"),
    "save_compute": ("REJECTED", "tampering"),
    "shared_storage": ("REJECTED", "compute_fallback"),
    "kernel_override": ("REJECTED", "compute_fallback"),
    "copy_override": ("REJECTED", "compute_fallback"),
    "exit_rewrite": ("REJECTED", "tampering"),
    "input_finalizer": ("REJECTED", "deferred_code"),
    "signal_fallback": ("REJECTED", "deferred_code"),
    "function_mode": ("REJECTED", "deferred_code"),
    "detach_patch": ("REJECTED", "tampering"),
    "builtin_patch": ("REJECTED", "tampering"),
    "class_swap": ("REJECTED", "deferred_code"),
    "meta_path_hook": ("REJECTED", "deferred_code"),
    "copyreg_hook": ("REJECTED", "deferred_code"),
    "hardcoded_shapes": ("REJECTED", "hardcoding"),
    "size_threshold": ("REJECTED", "hardcoding"),
    "precision_downgrade": ("REJECTED", "precision"),
    "wrong_dtype": ("INCORRECT_DTYPE", None),
}


@pytest.fixture(scope="session")
def cheat_results(task_root, tmp_path_factory):
    folder = tmp_path_factory.mktemp("cheats")
    jobs = {name: (task_root / "rms_norm", cheat_solution(name, folder)) for name in CPU_CHEATS}
    return evaluate_many(jobs)


@pytest.mark.parametrize("name", sorted(CPU_CHEATS))
def test_cheat_is_rejected_with_its_reason(name, cheat_results):
    result = cheat_results[name]
    status, detector = CPU_CHEATS[name]
    assert result.status == status, f"{name}: {result.status} {result.reason}"
    if detector is not None:
        assert result.detector == detector, f"{name}: {result.reason}"
        assert result.reason.startswith(detector)
        assert result.findings and result.findings[0].cheat
