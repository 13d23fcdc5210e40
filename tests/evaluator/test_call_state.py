"""The call-state detector: every place a solution can keep a count between two calls with the
same inputs is seen changing, and an honest cache that fills once by layout is not."""

import importlib.util
import sys

import pytest
import torch

from gates.evaluator.detectors.call_state import (
    CallState,
    StateAcrossCalls,
    check_state_unchanged,
    first_change,
)

SOLUTION = """
import functools
import itertools

import torch

_by_layout = {}
_in_list = [0]
_counter = itertools.count()
_held = functools.partial(print, [0])
_device = torch.zeros(4, dtype=torch.int32)
_view = torch.zeros(8, dtype=torch.int32)[:4]


def _beside_the_view():
    # a raw write (as a kernel makes: no version bump) past the view's end, in its storage
    torch.as_strided(_view, (1,), (1,), 7).numpy()[0] += 1


@functools.lru_cache
def _tile(rows):
    return rows


class Tally:
    total = 0

    def __init__(self):
        self.seen = 0


_instance = Tally()


def _make_closure():
    calls = 0

    def step():
        nonlocal calls
        calls += 1

    return step


closure_step = _make_closure()


def with_default(box={"calls": 0}):
    box["calls"] += 1


def honest(x):
    key = (tuple(x.shape), x.dtype)
    if key not in _by_layout:
        _by_layout[key] = len(_by_layout)
    _tile(x.shape[0])  # a hit on every call after the first: not a change
    return x


COUNTERS = {
    "list": lambda: _in_list.__setitem__(0, _in_list[0] + 1),
    "count": lambda: next(_counter),
    "partial": lambda: _held.args[0].append(1),
    "device": lambda: _device.add_(1),
    "class": lambda: setattr(Tally, "total", Tally.total + 1),
    "instance": lambda: setattr(_instance, "seen", _instance.seen + 1),
    "closure": closure_step,
    "default": with_default,
    "function_attribute": lambda: setattr(honest, "calls", getattr(honest, "calls", 0) + 1),
    "lru_cache_entries": lambda: _tile(object()),  # a new entry per call
    "beside_a_view": _beside_the_view,
}
"""


@pytest.fixture()
def solution(tmp_path):
    folder = tmp_path / "solution"
    folder.mkdir()
    (folder / "kernel.py").write_text(SOLUTION)
    spec = importlib.util.spec_from_file_location("_judged_kernel", folder / "kernel.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["_judged_kernel"] = module
    spec.loader.exec_module(module)
    yield CallState(str(folder)), module
    del sys.modules["_judged_kernel"]


def test_an_honest_cache_that_fills_once_per_layout_is_not_a_change(solution):
    state, module = solution
    x = torch.ones(3, 5)
    module.honest(x)
    before = state.fingerprint()
    module.honest(torch.zeros(3, 5))
    assert first_change(before, state.fingerprint()) is None
    check_state_unchanged("case", before, state.fingerprint())


@pytest.mark.parametrize(
    "where",
    [
        "list", "count", "partial", "device", "class", "instance", "closure", "default",
        "function_attribute", "lru_cache_entries", "beside_a_view",
    ],
)  # fmt: skip
def test_every_place_a_count_can_hide_is_seen(solution, where):
    state, module = solution
    module.COUNTERS[where]()
    before = state.fingerprint()
    module.COUNTERS[where]()
    change = first_change(before, state.fingerprint())
    assert change is not None, where
    with pytest.raises(StateAcrossCalls, match="changed between two calls with the same inputs"):
        check_state_unchanged("case", before, state.fingerprint())


def test_only_the_solutions_modules_are_walked(solution):
    state, module = solution
    assert [m.__name__ for m in state.modules()] == ["_judged_kernel"]
    assert any(where.startswith("_judged_kernel._by_layout") for where in state.fingerprint())
