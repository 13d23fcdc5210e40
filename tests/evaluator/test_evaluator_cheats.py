"""Every cheat class the CPU can show is rejected with its exact class; honest solutions that
look unusual (autotuned, slightly inaccurate) are not."""

import pytest
from cheat_packing import cheat_solution
from evaluation_jobs import evaluate_many

# fixture file -> (expected status, expected cheat class or None)
CPU_CHEATS = {
    "torch_fallback": ("REJECTED", "TorchComputeFallback"),
    "functional_fallback": ("REJECTED", "TorchComputeFallback"),
    "host_compute": ("REJECTED", "HostComputeFallback"),
    "import_compute": ("REJECTED", "ImportTimeCompute"),
    "dispatch_disable": ("REJECTED", "DispatchTraceEvaded"),
    "tls_exclude": ("REJECTED", "DispatchTraceEvaded"),
    "alias_pop": ("REJECTED", "DispatchTraceEvaded"),
    "closure_pop": ("REJECTED", "DispatchTraceEvaded"),
    "child_process": ("REJECTED", "ChildProcess"),
    "thread_offload": ("REJECTED", "ExtraThreads"),
    "narrow_inputs": ("REJECTED", "PrecisionDowngrade"),
    "shape_memo": ("REJECTED", "OutputReplayed"),
    "kept_buffer": ("REJECTED", "OutputMemoryReused"),
    "aliased_output": ("REJECTED", "OutputAliasesInput"),
    "batch_broadcast": ("REJECTED", "RowsCopiedAcrossBatch"),
    "batch_truncated": ("REJECTED", "TrailingRowsSkipped"),
    "input_mutation": ("REJECTED", "InputMutated"),
    "stale_memory": ("REJECTED", "UninitialisedOutput"),
    "subclass_output": ("REJECTED", "SubclassedOutput"),
    "background_thread": ("REJECTED", "ExtraThreads"),
    "timer_patch": ("REJECTED", "TimerPatched"),
    "graph_instantiate": ("REJECTED", "TimerPatched"),
    "graph_nodes_view": ("REJECTED", "TimerPatched"),
    "graph_reset": ("REJECTED", "EvaluatorPatched"),
    "evaluator_patch": ("REJECTED", "EvaluatorPatched"),
    "heap_walk": ("REJECTED", "EvaluatorIntrospection"),
    "frame_walk": ("REJECTED", "EvaluatorIntrospection"),
    "request_reader": ("REJECTED", "EvaluatorFileAccess"),
    "dynamic_code": ("REJECTED", "DynamicCode"),
    "native_library": ("REJECTED", "DynamicCode"),
    "library_loader": ("REJECTED", "DynamicCode"),
    "library_plant": ("REJECTED", "EvaluatorFileAccess"),
    "ctypes_compute": ("REJECTED", "RawMemoryAccess"),
    "proc_mem_compute": ("REJECTED", "EvaluatorFileAccess"),
    "save_compute": ("REJECTED", "EvaluatorPatched"),
    # torch's shared-memory manager is a child process: the process filter refuses it first
    "shared_storage": ("RUNTIME_ERROR", None),
    "kernel_override": ("REJECTED", "DispatchTraceEvaded"),
    "copy_override": ("REJECTED", "KernelReplaced"),
    "exit_rewrite": ("REJECTED", "EvaluatorPatched"),
    "input_finalizer": ("REJECTED", "DeferredCode"),
    "signal_fallback": ("REJECTED", "DeferredCode"),
    "function_mode": ("REJECTED", "DeferredCode"),
    "detach_patch": ("REJECTED", "EvaluatorPatched"),
    "builtin_patch": ("REJECTED", "EvaluatorPatched"),
    "class_swap": ("REJECTED", "DeferredCode"),
    "meta_path_hook": ("REJECTED", "DeferredCode"),
    "copyreg_hook": ("REJECTED", "DeferredCode"),
    "hardcoded_shapes": ("REJECTED", "ShapeSpecificHardcoding"),
    "size_threshold": ("REJECTED", "ShapeSpecificHardcoding"),
    "precision_downgrade": ("REJECTED", "PrecisionDowngrade"),
    "wrong_dtype": ("INCORRECT_DTYPE", None),
    # The classes that escaped before (issue 13), each closed in general.
    "policy_widen": ("REJECTED", "TorchComputeFallback"),
    "launch_hook": ("REJECTED", "TorchComputeFallback"),
    "mmap_compute": ("REJECTED", "HostComputeFallback"),
    "dlpack_compute": ("REJECTED", "HostComputeFallback"),
    "array_interface": ("REJECTED", "HostComputeFallback"),
    "tolist_map": ("REJECTED", "HostComputeFallback"),
    "native_build": ("REJECTED", "ChildProcess"),
    "native_import": ("REJECTED", "DynamicCode"),
    "record_wipe": ("REJECTED", "EvaluatorPatched"),
    # State the evaluator reads after the import, rewritten in place: a reference role's
    # tuning table, the registry's declaration, the promotion thresholds, the settings the
    # reference roles compile under.
    "baseline_tuning": ("REJECTED", "EvaluatorPatched"),
    "contract_widen": ("REJECTED", "EvaluatorPatched"),
    "threshold_widen": ("REJECTED", "EvaluatorPatched"),
    "compile_settings": ("REJECTED", "SettingsChanged"),
    "wide_batch_wrong": ("INCORRECT_NUMERICAL", None),
    # Behaving one way while judged: asking for a profile hook or for the loaded modules.
    "monitor_probe": ("REJECTED", "EnvironmentInspection"),
    "module_sniff": ("REJECTED", "EnvironmentInspection"),
    # ... or until a date, or on a rare call: asking the clock or the host's randomness.
    "date_bomb": ("REJECTED", "EnvironmentInspection"),
    "coin_flip": ("REJECTED", "EnvironmentInspection"),
    # ... through a module beyond the import allow-list, or torch's own counters and state.
    "cpu_time_bomb": ("REJECTED", "EnvironmentInspection"),
    "proc_stat": ("REJECTED", "EnvironmentInspection"),
    "host_name": ("REJECTED", "EnvironmentInspection"),
    "allocator_reading": ("REJECTED", "EnvironmentInspection"),
    "rng_position": ("REJECTED", "EnvironmentInspection"),
    "libc_clock": ("REJECTED", "DynamicCode"),  # its library load is refused first
    # ... or in one process of a thousand: a value each process answers differently.
    "process_coin": ("REJECTED", "EnvironmentInspection"),
    # ... and erasing, from inside the candidate process, what that process noted.
    "findings_wipe": ("REJECTED", "EvaluatorIntrospection"),
    # ... or after so many calls: state that changes between two calls with the same inputs.
    "call_counter": ("REJECTED", "StateAcrossCalls"),
    "closure_counter": ("REJECTED", "StateAcrossCalls"),
    "kernel_counter": ("REJECTED", "StateAcrossCalls"),
    # Its own __name__ and __file__ are the deployment's, so it computes as deployed: wrong.
    "name_sniff": ("INCORRECT_NUMERICAL", None),
    "autotune_honest": ("PASSED", None),
    "inaccurate_kernel": ("INCORRECT_NUMERICAL", None),
}


@pytest.fixture(scope="session")
def cheat_results(task_root, tmp_path_factory):
    folder = tmp_path_factory.mktemp("cheats")
    jobs = {name: (task_root / "rms_norm", cheat_solution(name, folder)) for name in CPU_CHEATS}
    return evaluate_many(jobs)


@pytest.mark.parametrize("name", sorted(CPU_CHEATS))
def test_cheat_is_rejected_with_its_exact_class(name, cheat_results):
    result = cheat_results[name]
    status, cheat = CPU_CHEATS[name]
    assert result.status == status, f"{name}: {result.status} {result.reason}"
    assert result.integrity in (None, "traced")
    if cheat is not None:
        from gates.evaluator.detectors.table import DETECTORS

        family = next(f.name for f in DETECTORS if cheat in {c.__name__ for c in f.cheats})
        assert result.findings and result.findings[0].cheat == cheat, f"{name}: {result.reason}"
        assert result.detector == family and result.reason.startswith(family)
    else:
        assert not result.findings, f"{name}: {result.reason}"


def test_an_autotuned_kernel_says_it_ran_its_first_configuration(cheat_results):
    notes = cheat_results["autotune_honest"].notes
    assert any("first configuration of 2" in note for note in notes), notes


def test_a_kernel_wrong_past_64_rows_fails_at_a_real_size(cheat_results):
    reason = cheat_results["wide_batch_wrong"].reason
    assert reason.startswith("hidden_real/"), reason
