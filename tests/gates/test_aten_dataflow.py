"""The ATen gate compares dataflow, not order: independent calls may move (two modulations
hoisted to the start, a residual add moved next to the following norm); a call added, removed,
fed a different value or moved across a write of what it reads is refused."""

import importlib.util
from pathlib import Path

import torch

from gates.registration.aten_sequence import dataflow_difference, first_divergence

PROBE = Path(__file__).resolve().parents[2] / "gates" / "registration" / "parity_probe.py"


def _probe_module():
    spec = importlib.util.spec_from_file_location("_parity_probe_under_test", PROBE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


RECORDER = _probe_module().make_recorder(torch)


def _weights():
    generator = torch.Generator().manual_seed(0)
    return [torch.randn(8, 8, generator=generator) for _ in range(3)]


def record(program) -> tuple[list[str], list[dict]]:
    weights = _weights()
    condition = torch.randn(2, 8, generator=torch.Generator().manual_seed(1))
    hidden = torch.randn(2, 8, generator=torch.Generator().manual_seed(2))
    recorder = RECORDER()
    with recorder:
        program(hidden, condition, weights)
    return recorder.calls, recorder.dataflow


def layer(hidden, condition, weights, hoisted=False):
    """Two modulations from the condition, each used by its half of the layer."""
    if hoisted:
        scale, shift = condition @ weights[0], condition @ weights[1]
        h = hidden * scale
        h = torch.relu(h @ weights[2])
        return h + shift
    scale = condition @ weights[0]
    h = hidden * scale
    h = torch.relu(h @ weights[2])
    shift = condition @ weights[1]
    return h + shift


def test_hoisting_independent_products_keeps_the_dataflow():
    base_calls, base = record(layer)
    calls, moved = record(lambda *a: layer(*a, hoisted=True))
    assert first_divergence(base_calls, calls) is not None, "the order did change"
    assert dataflow_difference(base, moved) is None


def test_an_added_call_is_refused():
    _, base = record(layer)

    def with_cast(hidden, condition, weights):
        return layer(hidden.double().float(), condition, weights)

    _, added = record(with_cast)
    difference = dataflow_difference(base, added)
    assert difference is not None and "_to_copy" in difference


def test_a_call_fed_another_value_is_refused():
    _, base = record(layer)

    def swapped(hidden, condition, weights):
        return layer(hidden, condition, [weights[1], weights[0], weights[2]])

    _, other = record(swapped)
    assert dataflow_difference(base, other) is not None


def test_a_read_moved_across_an_in_place_write_is_refused():
    def read_then_write(hidden, condition, weights):
        h = hidden.clone()
        before = h @ weights[0]
        h.add_(condition)
        return before + h

    def write_then_read(hidden, condition, weights):
        h = hidden.clone()
        h.add_(condition)
        before = h @ weights[0]
        return before + h

    _, base = record(read_then_write)
    _, moved = record(write_then_read)
    assert dataflow_difference(base, moved) is not None


def test_a_missing_record_is_refused():
    _, base = record(layer)
    assert "no dataflow" in dataflow_difference(base, None)
