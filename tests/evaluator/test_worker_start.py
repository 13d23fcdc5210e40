"""Workers forked from the zygote behave as fresh worker processes do: a crash, an os._exit
and a timeout end the same way on both start paths, and neither can start a process on the
CPU; the zygote holds no CUDA context, no solution and one thread; and what a solution
changes in its worker's modules never reaches the next evaluation's workers."""

import json
import os
from pathlib import Path


def _solution(folder: Path, name: str, source: str) -> Path:
    document = {
        "name": name,
        "definition": "rms_norm",
        "author": "tests",
        "spec": {"language": "triton", "target_hardware": ["cpu"], "entry_point": "s.py::rms_norm"},
        "sources": [{"path": "s.py", "content": source}],
    }
    path = folder / f"{name}.json"
    path.write_text(json.dumps(document))
    return path


# Tries a process the audit hook does not see (`_posixsubprocess.fork_exec` raises no audit
# event); on the CPU the worker's process filter refuses it, so the worker exits with no
# child left behind.
STRAY_SOURCE = """
import os, sys

def rms_norm(x, weight, eps=1e-6):
    fork_exec = sys.modules["_posixsubprocess"].fork_exec
    sleep = b"/bin/sleep"
    try:
        pid = fork_exec(
            [sleep, b"300"], [sleep], True, (), None, None,
            -1, -1, -1, -1, -1, -1, *os.pipe(), False, False, -1, None, None, None, -1, None,
            False,
        )
    except OSError as error:
        pid = f"refused {error.errno}"
    with open(PID_FILE, "w") as handle:
        handle.write(str(pid))
    os._exit(7)
"""


def test_a_worker_that_exits_is_a_runtime_error_and_could_start_no_stray(
    start_method, task_root, tmp_path
):
    from gates.evaluator.evaluation import evaluate

    pid_file = tmp_path / "stray.pid"
    source = STRAY_SOURCE.replace("PID_FILE", repr(str(pid_file)))
    result = evaluate(task_root / "rms_norm", _solution(tmp_path, "stray", source), timeout=120)
    assert result.status == "RUNTIME_ERROR", result.reason
    assert "exited with code 7" in result.reason
    assert pid_file.read_text() == "refused 1", "the worker started a process on the CPU"


def test_the_zygote_holds_one_thread_no_cuda_and_no_solution(monkeypatch, task_root, tmp_path):
    from gates.evaluator.evaluation import evaluate
    from gates.evaluator.forked_worker import zygote_for
    from gates.evaluator.launcher import worker_environment
    from gates.evaluator.loading import DEPLOYED_PREFIX

    monkeypatch.setenv("CONTROLLER_WORKER_START", "zygote")
    first = _describe(zygote_for, worker_environment("cpu"))
    result = evaluate(task_root / "rms_norm", task_root / "rms_norm" / "solution", timeout=240)
    assert result.status == "PASSED", result.reason
    after = _describe(zygote_for, worker_environment("cpu"))
    assert after["pid"] == first["pid"] and after["workers_forked"] >= first["workers_forked"] + 2
    assert after["threads"] == 1
    assert after["cuda_initialized"] is False and after["cuda_driver_initialised"] is False
    assert "torch._dynamo" in after["modules"]
    assert "operators" not in after["modules"]  # its import asks for CUDA: never in the zygote
    assert not [name for name in after["modules"] if name.startswith(DEPLOYED_PREFIX)]


def _describe(zygote_for, environment) -> dict:
    from gates.evaluator.launcher import REPOSITORY_ROOT

    return zygote_for(environment, REPOSITORY_ROOT).describe()


# The first solution changes torch for good (a patched function and a marker) and still
# computes right; the second fails when it finds either in its own worker. Both wrap the
# task's baseline kernel.
PATCHING_SOURCE = """
import torch
from .operators.catalog.rms_norm import rms_norm_triton

torch.rsqrt = lambda *args, **kwargs: None
torch.leaked_marker = True

def rms_norm(x, weight, eps=1e-6):
    return rms_norm_triton(x, weight, eps)
"""
PROBE_SOURCE = """
import torch
from .operators.catalog.rms_norm import rms_norm_triton

LEAKED = hasattr(torch, "leaked_marker") or getattr(torch.rsqrt, "__name__", "") == "<lambda>"

def rms_norm(x, weight, eps=1e-6):
    if LEAKED:
        raise RuntimeError("state from an earlier evaluation leaked into this worker")
    return rms_norm_triton(x, weight, eps)
"""


def test_module_state_a_solution_changes_does_not_reach_the_next_evaluation(
    monkeypatch, task_root, tmp_path
):
    from gates.evaluator.evaluation import evaluate

    monkeypatch.setenv("CONTROLLER_WORKER_START", "zygote")
    task = task_root / "rms_norm"
    baseline = json.loads((task / "solution" / "solution.json").read_text())
    results = []
    for name, source in (("patcher", PATCHING_SOURCE), ("probe", PROBE_SOURCE)):
        document = json.loads(_solution(tmp_path, name, source).read_text())
        document["sources"] += baseline["sources"]
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(document))
        results.append(evaluate(task, path, timeout=240))
    patcher, probe = results
    assert patcher.status in ("PASSED", "REJECTED"), patcher.reason  # it was imported
    assert probe.status == "PASSED", probe.reason


def test_a_zygote_that_cannot_start_says_why(tmp_path):
    import pytest

    from gates.evaluator.forked_worker import ZygoteClient, ZygoteUnavailable

    (tmp_path / "torch.py").write_text("raise ImportError('no torch in this environment')\n")
    environment = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tmp_path)}
    with pytest.raises(ZygoteUnavailable, match="no torch in this environment"):
        ZygoteClient(environment, tmp_path)


def test_a_closed_zygote_still_reports_the_workers_it_forked(monkeypatch, task_root, tmp_path):
    import pytest
    from test_held_judge import _request

    from gates.evaluator import forked_worker
    from gates.evaluator.launcher import WorkerCrashed, finish_worker, start_worker
    from gates.evaluator.protocol import JudgeReport

    monkeypatch.setenv("CONTROLLER_WORKER_START", "zygote")
    request, path = _request(task_root, tmp_path)
    missing = tmp_path / "candidate-report.json"
    judge = start_worker("judge", request, path, (str(missing),), held=True)
    assert type(judge.process).__name__ == "ForkedProcess"
    forked_worker._close_zygotes()  # as when a zygote is evicted or the controller exits
    with pytest.raises(WorkerCrashed, match="exited with code 1: FileNotFoundError"):
        finish_worker(judge, request, JudgeReport, timeout=120)


def test_an_unknown_start_method_is_refused_in_one_line(monkeypatch, task_root):
    import pytest

    from gates.errors import GateError
    from gates.evaluator.evaluation import evaluate

    monkeypatch.setenv("CONTROLLER_WORKER_START", "thread")
    with pytest.raises(GateError, match="use 'zygote' or 'spawn'"):
        evaluate(task_root / "rms_norm", task_root / "rms_norm" / "solution", timeout=60)


def test_a_zygote_whose_imports_start_a_thread_refuses_to_fork(tmp_path):
    import pytest

    from gates.evaluator.forked_worker import ZygoteClient, ZygoteUnavailable
    from gates.evaluator.launcher import REPOSITORY_ROOT, worker_environment

    (tmp_path / "sitecustomize.py").write_text(
        "import threading, time\n"
        "threading.Thread(target=time.sleep, args=(600,), daemon=True).start()\n"
    )
    environment = worker_environment("cpu")
    environment["PYTHONPATH"] += os.pathsep + str(tmp_path)
    with pytest.raises(ZygoteUnavailable, match="2 threads run in it after its imports"):
        ZygoteClient(environment, REPOSITORY_ROOT)
