"""The profiler-backed recorder explains composite ops by what the trace saw inside them,
and names compute that ran while the trace was switched off.

Each check runs in a fresh interpreter: a profiler session and a dispatch mode in the test
process itself upset the Triton interpreter of later tests in the same run.
"""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
PRELUDE = """
import torch
from gates.evaluator.detectors.trace_evasion import AtenRecorder
from gates.evaluator.tracing import CandidateTracer

def record(work):
    tracer = CandidateTracer(poison_outputs=False)
    recorder = AtenRecorder()
    with tracer, recorder:
        work()
    return recorder.unseen_compute(tracer.seen, frozenset())
"""


def _unseen(body: str) -> str:
    script = PRELUDE + body
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip().splitlines()[-1]


def test_a_composite_op_is_explained_by_the_ops_the_trace_saw_inside_it():
    body = """
values = torch.randn(257)
print(record(lambda: torch.quantile(values, torch.tensor([0.2, 0.5, 0.8]))))
"""
    assert _unseen(body) == "[]"


def test_compute_with_the_python_dispatch_key_excluded_is_named():
    body = """
values = torch.randn(64)
key = torch._C.DispatchKey.Python

def hidden():
    torch._C._dispatch_tls_set_dispatch_key_excluded(key, True)
    try:
        values.pow(2).mean()
    finally:
        torch._C._dispatch_tls_set_dispatch_key_excluded(key, False)

print(record(hidden))
"""
    assert "'mean'" in _unseen(body)
