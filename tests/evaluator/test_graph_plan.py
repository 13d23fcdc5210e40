"""Graph timing's plan on the CPU, with a stand-in for the device (the CUDA runs are in
`test_evaluator_gpu.py`): every graph of a role is inspected by that role's inspection as it
is captured and before any replay; both roles get the same input sets in each replay;
warm replays rotate through every placement; the figure promotion does not use is sampled on
every SECONDARY_EVERY-th replay; a replay whose outputs are wrong is counted; and the witness
hook sees each replay's own outputs."""

import pytest
import torch

from gates.evaluator.detectors.cuda_graph import GraphRejected
from gates.evaluator.graph_timing import (
    CALLS_PER_GRAPH,
    PLACEMENTS,
    SECONDARY_EVERY,
    time_workload,
)

COLD_CALLS = 25


class StandInGraph:
    """Calls captured once and replayed on whatever the captured input buffers then hold,
    into the outputs the capture made, as a CUDA graph does."""

    def __init__(self, function, input_sets, params):
        self.function, self.input_sets, self.params = function, input_sets, params
        self.outputs = [(function(*inputs, **params),) for inputs in input_sets]

    def replay(self) -> None:
        for inputs, outputs in zip(self.input_sets, self.outputs, strict=True):
            outputs[0].copy_(self.function(*inputs, **self.params))


class StandInDevice:
    """Records what the plan asks of the device; a role's replay costs its `per_call` ms a
    call. `after_captures` runs when the plan synchronises after its last capture."""

    def __init__(self, per_call: dict, after_captures=lambda: None):
        self.per_call, self.after_captures = per_call, after_captures
        self.captured: list[StandInGraph] = []
        self.replayed: list[StandInGraph] = []
        self.synchronised = 0

    def warm_up(self, function, inputs, params) -> None:
        function(*inputs, **params)

    def capture(self, function, input_sets, params):
        graph = StandInGraph(function, input_sets, params)
        self.captured.append(graph)
        return graph, graph.outputs

    def timed_replay(self, graph, calls: int, drained: bool) -> float:
        graph.replay()
        self.replayed.append(graph)
        return self.per_call[graph.function] * len(graph.input_sets)

    def milliseconds(self, replay_time: float) -> float:
        return replay_time

    def synchronize(self) -> None:
        self.synchronised += 1
        if self.synchronised == 1:
            self.after_captures()


class StandInPool:
    """Fresh input sets; a call's output is right when it is twice its set."""

    def __init__(self, count: int = 200):
        generator = torch.Generator().manual_seed(0)
        self.sets = [(torch.randn(4, 8, generator=generator),) for _ in range(count)]
        self.checked: list[tuple] = []  # (function, chosen sets) per replay

    def batch_mismatch(self, outputs, chosen) -> torch.Tensor:
        wrong = sum(
            not torch.equal(produced[0], self.sets[index][0] * 2)
            for produced, index in zip(outputs, chosen, strict=True)
        )
        self.checked.append(tuple(chosen))
        return torch.tensor(wrong)


def candidate(x):
    return x * 2


def baseline(x):
    return x + x


ROLES = {"candidate": candidate, "baseline": baseline}


def _timed(device, pool=None, replays=6, figure="warm", inspections=None, warm=CALLS_PER_GRAPH):
    pool = pool or StandInPool()
    mismatches = torch.zeros((), dtype=torch.int64)
    times = time_workload(
        ROLES, pool, {}, replays, COLD_CALLS, mismatches, inspections or {}, figure,
        device=device, warm=warm,
    )  # fmt: skip
    return times, int(mismatches), pool


def test_every_graph_of_a_role_is_inspected_by_that_role_s_inspection_before_any_replay():
    device = StandInDevice({candidate: 1.0, baseline: 1.0})
    inspected = {"candidate": [], "baseline": []}

    def inspection(role):
        def inspect(graph, calls):
            assert device.replayed == [], "a graph was replayed before it was inspected"
            inspected[role].append((graph, calls))

        return inspect

    _timed(device, inspections={role: inspection(role) for role in inspected})
    for role, function in ROLES.items():
        assert len(inspected[role]) == 1 + PLACEMENTS  # the cold graph and every placement
        assert all(graph.function is function for graph, _ in inspected[role])
        assert all(calls == len(graph.input_sets) for graph, calls in inspected[role])
    assert len(device.captured) == 2 * (1 + PLACEMENTS)


def test_a_role_without_an_inspection_is_not_inspected():
    device = StandInDevice({candidate: 1.0, baseline: 1.0})
    inspected = []
    _timed(device, inspections={"candidate": lambda graph, calls: inspected.append(graph)})
    assert len(inspected) == 1 + PLACEMENTS
    assert all(graph.function is candidate for graph in inspected)


def test_a_graph_rejected_after_the_first_stops_the_plan_before_any_replay():
    """A solution honest in its first captures and not in a later one is still judged."""
    device = StandInDevice({candidate: 1.0, baseline: 1.0})
    judged = []

    def inspect(graph, calls):
        judged.append(graph)
        if len(judged) == 3:
            raise GraphRejected("node 0 (kernel: foreign) runs a kernel that is not the solution's")

    with pytest.raises(GraphRejected):
        _timed(device, inspections={"candidate": inspect})
    assert device.replayed == []


def test_both_roles_get_the_same_sets_in_every_replay_and_every_placement_is_used():
    device = StandInDevice({candidate: 1.0, baseline: 1.0})
    fresh = 2 * PLACEMENTS * CALLS_PER_GRAPH  # a fresh set for every call of every replay
    _, _, pool = _timed(device, pool=StandInPool(fresh), replays=2 * PLACEMENTS)
    sets = {}  # (role, warm or cold) -> the sets of each of its replays, in order
    for graph, chosen in zip(device.replayed, pool.checked, strict=True):
        kind = "cold" if len(graph.input_sets) == COLD_CALLS else "warm"
        sets.setdefault((graph.function, kind), []).append(chosen)
    for kind in ("warm", "cold"):
        assert sets[(candidate, kind)] == sets[(baseline, kind)]
    assert len(set(sets[(candidate, "warm")])) == 2 * PLACEMENTS  # fresh sets every replay
    warm = [g for g in device.replayed if len(g.input_sets) != COLD_CALLS]
    for role in ROLES.values():
        assert len({id(g) for g in warm if g.function is role}) == PLACEMENTS


def test_warm_graphs_hold_the_calls_they_are_given_and_each_replay_loads_that_many_sets():
    device = StandInDevice({candidate: 1.0, baseline: 1.0})
    _, _, pool = _timed(device, replays=4, warm=1)
    warm = [g for g in device.replayed if len(g.input_sets) != COLD_CALLS]
    assert warm and all(len(graph.input_sets) == 1 for graph in warm)
    loaded = zip(device.replayed, pool.checked, strict=True)
    assert all(len(chosen) == 1 for graph, chosen in loaded if graph in warm)


@pytest.mark.parametrize("figure, other", [("warm", "cold"), ("cold", "warm")])
def test_the_other_figure_is_sampled_every_few_replays(figure, other):
    device = StandInDevice({candidate: 0.9, baseline: 1.0})
    replays = 3 * SECONDARY_EVERY
    times, mismatches, _ = _timed(device, replays=replays, figure=figure)
    assert mismatches == 0
    for role in ROLES:
        assert len(times[role][figure]) == replays
        assert len(times[role][other]) == replays // SECONDARY_EVERY
    assert times["candidate"][figure][0] == pytest.approx(0.9)


def test_replays_that_compute_something_else_than_the_capture_are_counted():
    """After the captures the candidate's kernel changes what it computes (as a graph whose
    replays differ from its capture would): every replayed output is compared."""
    changed = []

    def candidate_that_changes(x):
        return x * 3 if changed else x * 2

    roles = {"candidate": candidate_that_changes, "baseline": baseline}
    device = StandInDevice({candidate_that_changes: 1.0, baseline: 1.0}, lambda: changed.append(1))
    mismatches = torch.zeros((), dtype=torch.int64)
    time_workload(roles, StandInPool(), {}, 3, COLD_CALLS, mismatches, {}, device=device)
    assert int(mismatches) > 0


def test_the_witness_hook_sees_every_replay_s_own_outputs_before_the_next_replay():
    """What `replay_witnesses` copies is what the replay it follows computed for its sets."""
    device = StandInDevice({candidate: 1.0, baseline: 1.0})
    pool = StandInPool(2 * PLACEMENTS * CALLS_PER_GRAPH)
    seen = []

    def witness(role, figure, outputs, chosen):
        assert device.replayed[-1].outputs is outputs
        right = [
            torch.equal(out[0], pool.sets[index][0] * 2)
            for out, index in zip(outputs, chosen, strict=True)
        ]
        seen.append((role, figure, all(right)))

    mismatches = torch.zeros((), dtype=torch.int64)
    replays = 2 * SECONDARY_EVERY
    time_workload(
        ROLES, pool, {}, replays, COLD_CALLS, mismatches, {}, device=device, witness=witness
    )
    assert len(seen) == len(device.replayed) and all(right for *_, right in seen)
    for role in ROLES:
        assert sum(1 for r, f, _ in seen if (r, f) == (role, "warm")) == replays
        assert sum(1 for r, f, _ in seen if (r, f) == (role, "cold")) == 2


class _KeptGraph:
    """Stands in for a kept CUDA graph: counts its instantiations."""

    def __init__(self) -> None:
        self.instantiations = 0

    def instantiate(self) -> None:
        self.instantiations += 1


def test_a_kept_graph_is_instantiated_at_capture_not_at_its_first_timed_replay(monkeypatch):
    import contextlib

    from gates.evaluator import graph_timing

    graph = _KeptGraph()
    monkeypatch.setattr(graph_timing, "_new_graph", lambda: (graph, True))
    monkeypatch.setattr(graph_timing.torch.cuda, "graph", lambda _: contextlib.nullcontext())
    captured, outputs = graph_timing.capture(lambda x: x + 1, [(torch.ones(2),)], {})
    assert captured is graph and graph.instantiations == 1 and len(outputs) == 1
    unkept = _KeptGraph()  # a torch without keep_graph instantiated it at capture's end
    graph_timing.instantiate_kept(unkept, False)
    assert unkept.instantiations == 0
