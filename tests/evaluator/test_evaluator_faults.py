"""A fault of the evaluator's own code is EVALUATOR_ERROR, never the solution's RUNTIME_ERROR:
the tracer records an exception of its own helpers (here injected into the helper that reads
an op's facts) even when the solution swallows it.

Runs in a fresh interpreter: a dispatch mode in the test process upsets the Triton
interpreter of later tests.
"""

import subprocess
import sys
from pathlib import Path

from gates.evaluator.protocol import EvaluationResult, evaluator_fault

ROOT = Path(__file__).resolve().parent.parent.parent
SCRIPT = """
import torch
from gates.evaluator.tracing import CandidateTracer, EvaluatorFault

class FaultyTracer(CandidateTracer):
    def _fact(self, func, args, kwargs, result):
        return kwargs.get("alpha", 1.0).dtype  # a helper reading .dtype of a float

def solution_that_swallows_errors():
    try:
        torch.ones(3).add(1.0)
    except Exception:
        pass

tracer = FaultyTracer(poison_outputs=False)
try:
    with tracer:
        torch.ones(3).add(1.0)
except EvaluatorFault:
    print("raised EvaluatorFault")
swallowed = FaultyTracer(poison_outputs=False)
with swallowed:
    solution_that_swallows_errors()
print("recorded", len(tracer.faults), len(swallowed.faults), tracer.faults[0])
"""


def test_a_fault_in_the_tracer_is_the_evaluators_even_when_swallowed():
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.strip().splitlines()
    assert lines[0] == "raised EvaluatorFault"
    assert lines[1].startswith("recorded 1 1 aten.ones") and "dtype" in lines[1]


def test_the_status_and_its_message_name_the_evaluator():
    try:
        (1.0).dtype  # noqa: B018
    except AttributeError as error:
        message = evaluator_fault(error)
    assert message.startswith("evaluator fault at test_evaluator_faults.py:")
    result = EvaluationResult(
        task="t", operator="rms_norm", solution="s", device="cpu", status="EVALUATOR_ERROR"
    )
    assert result.status == "EVALUATOR_ERROR"
