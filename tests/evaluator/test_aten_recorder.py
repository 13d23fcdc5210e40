"""The profiler-backed recorder explains composite ops by what the trace saw inside them,
and names compute that ran while the trace was switched off."""

import torch

from gates.evaluator.detectors.trace_evasion import AtenRecorder
from gates.evaluator.tracing import CandidateTracer


def _record(work):
    tracer = CandidateTracer(frozenset(), frozenset(), poison_outputs=False)
    recorder = AtenRecorder()
    with tracer, recorder:
        work()
    return recorder.unseen_compute(tracer.seen, frozenset())


def test_a_composite_op_is_explained_by_the_ops_the_trace_saw_inside_it():
    values = torch.randn(257)
    assert _record(lambda: torch.quantile(values, torch.tensor([0.2, 0.5, 0.8]))) == []


def test_compute_with_the_python_dispatch_key_excluded_is_named():
    values = torch.randn(64)
    key = torch._C.DispatchKey.Python

    def hidden():
        torch._C._dispatch_tls_set_dispatch_key_excluded(key, True)
        try:
            values.pow(2).mean()
        finally:
            torch._C._dispatch_tls_set_dispatch_key_excluded(key, False)

    unseen = _record(hidden)
    assert "mean" in unseen, unseen
