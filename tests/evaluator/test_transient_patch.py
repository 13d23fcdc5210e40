"""The per-call identity check of the timing loop (CPU: the check itself; the loop runs it
after every timed call on CUDA). Each attack is a patch a solution could make at the end of
one timed call and undo at the start of the next."""

import pytest
import torch

import gates.evaluator.timing as timing
from gates.evaluator.timing import FreshPool, _loop_identities


def _identities():
    identities = _loop_identities()
    assert identities.unchanged(), identities.changed()
    return identities


@pytest.fixture
def restore():
    """Undo every attribute a test sets, whatever happens."""
    saved = []

    def setattr_for_test(owner, name, value):
        saved.append((owner, name, owner.__dict__.get(name, restore)))
        setattr(owner, name, value)

    yield setattr_for_test
    for owner, name, value in reversed(saved):
        if value is restore:
            delattr(owner, name)
        else:
            setattr(owner, name, value)


def test_the_evaluators_own_work_between_calls_changes_nothing():
    identities = _identities()
    a, b = torch.randn(64), torch.randn(64)
    torch.le(torch.sub(a, b).abs_(), 1.0).all().logical_not_()
    timing.__dict__.setdefault("__warningregistry__", {})  # a warning issued from timing.py
    assert identities.unchanged(), identities.changed()


def test_a_replaced_event_record_is_seen(restore):
    identities = _identities()
    restore(torch.cuda.Event, "record", lambda self, stream=None: None)
    assert not identities.unchanged()
    assert "Event.record" in identities.changed()


def test_a_replaced_module_function_is_seen(restore):
    identities = _identities()
    restore(torch, "sub", lambda a, b: torch.zeros_like(a))
    assert not identities.unchanged()
    assert "torch.sub" in identities.changed()


def test_a_descriptor_that_answers_class_lookups_with_the_original_is_seen(restore):
    original = torch.Tensor.abs_

    class Disguised:
        def __get__(self, instance, owner=None):
            return original if instance is None else (lambda: torch.zeros(()))

    identities = _identities()
    restore(torch.Tensor, "abs_", Disguised())
    assert torch.Tensor.abs_ is original  # what a getattr-based check would compare
    assert not identities.unchanged()


def test_a_global_shadowing_a_builtin_in_the_timing_module_is_seen(restore):
    identities = _identities()
    restore(timing, "len", lambda value: 0)
    assert not identities.unchanged()
    assert "gates.evaluator.timing.len" in identities.changed()


def test_a_torch_function_mode_left_active_is_seen():
    from torch.overrides import TorchFunctionMode

    identities = _identities()
    mode = TorchFunctionMode()
    mode.__enter__()
    try:
        assert not identities.unchanged()
    finally:
        mode.__exit__(None, None, None)
    assert identities.unchanged()


def test_a_tensor_subclass_output_fails_the_timed_comparison():
    from operators import REGISTRY

    declaration = REGISTRY.declaration("rms_norm")
    workload = declaration.workloads[0]

    def reference(*inputs, **params):
        return declaration.reference(*inputs, **params)

    pool = FreshPool(declaration, workload, reference, (5, 6), 2, "cpu")

    class Agreeable(torch.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            return torch.zeros((), dtype=torch.bool)  # "no mismatch" for every comparison

    fake = pool.expected[0][0].as_subclass(Agreeable)
    assert bool(pool.mismatch(fake, 0, 0))


def test_the_timed_call_tracer_changes_nothing_it_is_checked_against():
    from gates.evaluator.tracing import TimedCallTracer

    identities = _identities()
    tracer = TimedCallTracer(expected_stream=None)
    for _ in range(3):
        with tracer:
            torch.empty(10).view(2, 5).add(1)
    assert identities.unchanged(), identities.changed()
    from gates.evaluator.detectors.compute_fallback import OpPolicy

    disallowed = OpPolicy(frozenset()).disallowed(tracer.facts)
    assert disallowed and "add" in disallowed[0]
