"""`controller evaluate`: baselines pass on every catalog task; bad input exits 2 in one line."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from cheat_packing import cheat_solution
from evaluation_jobs import evaluate_many
from process_state import running

from gates.tasks.trace import Trace
from operators import REGISTRY

ROOT = Path(__file__).resolve().parents[2]


def controller(*arguments: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "controller", *arguments],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "TRITON_INTERPRET": "1"},
        timeout=600,
    )


@pytest.fixture(scope="session")
def baseline_results(task_root):
    jobs = {d.name: (task_root / d.name, task_root / d.name / "solution") for d in REGISTRY}
    return evaluate_many(jobs)


BLAS_BASELINES = {"stacked_projection", "qkv_projection", "gated_gelu_projection"}
BLAS_BASELINES |= {"attention_output"}
"""Fusions registered for tuning: their production path is what the model computed before
(BLAS products), which a candidate may call too."""


@pytest.mark.parametrize("operator", REGISTRY.names())
def test_the_baseline_of_every_catalog_task_passes(operator, baseline_results):
    result = baseline_results[operator]
    assert result.status == "PASSED", result.reason
    assert result.cases_checked >= len(REGISTRY.declaration(operator).workloads) * 9
    assert result.timing is None  # no latency on CPU


@pytest.mark.parametrize("operator", sorted(BLAS_BASELINES))
def test_a_blas_baseline_lists_its_library_products(operator, baseline_results):
    calls = baseline_results[operator].library_calls
    assert calls and all(call.startswith(("aten.mm.", "aten.addmm.")) for call in calls), calls


def test_evaluate_exit_codes_and_json(task_root, tmp_path):
    passed = controller(
        "evaluate",
        str(task_root / "rms_norm"),
        "--solution",
        str(task_root / "rms_norm" / "solution"),
        "--json",
    )
    assert passed.returncode == 0, passed.stderr
    document = json.loads(passed.stdout)
    assert document["status"] == "PASSED"
    traces = [Trace.model_validate(trace) for trace in document["traces"]]
    assert len(traces) == len(REGISTRY.declaration("rms_norm").workloads)
    assert all(t.evaluation.status == "PASSED" and t.evaluation.correctness for t in traces)
    cheat = cheat_solution("torch_fallback", tmp_path)
    failed = controller("evaluate", str(task_root / "rms_norm"), "--solution", str(cheat))
    assert failed.returncode == 1
    assert "REJECTED" in failed.stdout and "compute_fallback" in failed.stdout


def test_bad_input_exits_2_with_one_line(task_root, tmp_path):
    task, solution = task_root / "rms_norm", task_root / "rms_norm" / "solution"
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    tampered = tmp_path / "tampered"
    subprocess.run(["cp", "-r", str(task), str(tampered)], check=True)
    (tampered / "workloads.jsonl").write_text("")
    other = task_root / "gated_gelu" / "solution"
    cases = [
        ("evaluate", str(tmp_path / "missing"), "--solution", str(solution)),
        ("evaluate", str(task), "--solution", str(tmp_path / "missing.json")),
        ("evaluate", str(task), "--solution", str(broken)),
        ("evaluate", str(tampered), "--solution", str(solution)),
        ("evaluate", str(task), "--solution", str(other)),
        ("evaluate", str(task), "--solution", str(solution), "--device", "cuda"),
    ]
    for arguments in cases:
        completed = controller(*arguments)
        assert completed.returncode == 2, (arguments, completed.stdout, completed.stderr)
        lines = completed.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("controller: error:"), completed.stderr


def test_a_hanging_solution_times_out(start_method, task_root, tmp_path):
    pid_file = tmp_path / "worker.pid"
    source = (
        f"import os, time\n\nopen({str(pid_file)!r}, 'w').write(str(os.getpid()))\n\n"
        "def rms_norm(x, weight, eps=1e-6):\n    time.sleep(600)\n"
    )
    document = {
        "name": "sleeper",
        "definition": "rms_norm",
        "author": "tests",
        "spec": {"language": "triton", "target_hardware": ["cpu"], "entry_point": "s.py::rms_norm"},
        "sources": [{"path": "s.py", "content": source}],
    }
    path = tmp_path / "sleeper.json"
    path.write_text(json.dumps(document))
    from gates.evaluator.evaluation import evaluate

    result = evaluate(task_root / "rms_norm", path, timeout=20)
    assert result.status == "TIMEOUT"
    assert pid_file.is_file(), "the worker never imported the solution"
    assert not running(int(pid_file.read_text())), "the timed-out worker still runs"
