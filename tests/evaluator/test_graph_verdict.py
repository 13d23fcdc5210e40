"""The CUDA-graph verdict on constructed node lists (the graph capture itself needs CUDA): only
the solution's Triton kernels, device memsets and device-to-device copies are accepted."""

import pytest

from gates.evaluator.detectors.cuda_graph import GraphNode, judge_graph

SOLUTION = frozenset({0x1000, 0x2000})


def kernel(function: int, name: str = "rms_rows_kernel") -> GraphNode:
    return GraphNode(kind="kernel", function=function, name=name)


def test_the_solutions_kernels_memsets_and_device_copies_are_accepted():
    nodes = [
        GraphNode(kind="memset"),
        kernel(0x1000),
        GraphNode(kind="memcpy", source="device", target="device"),
        kernel(0x2000),
        GraphNode(kind="empty"),
    ]
    verdict = judge_graph(nodes, SOLUTION)
    assert verdict.accepted and verdict.kernels == 2


def test_a_kernel_the_solution_did_not_compile_is_rejected():
    # An eager Torch fallback captured into the graph runs ATen's own kernels.
    nodes = [kernel(0x1000), kernel(0x9999, "vectorized_elementwise_kernel")]
    verdict = judge_graph(nodes, SOLUTION)
    assert not verdict.accepted
    assert "node 1" in verdict.reason and "vectorized_elementwise_kernel" in verdict.reason


@pytest.mark.parametrize(
    ("source", "target"),
    [("host", "device"), ("device", "host"), ("managed", "device"), ("device", "unknown")],
)
def test_a_copy_touching_anything_but_device_memory_is_rejected(source, target):
    nodes = [kernel(0x1000), GraphNode(kind="memcpy", source=source, target=target)]
    verdict = judge_graph(nodes, SOLUTION)
    assert not verdict.accepted and f"copies {source} to {target}" in verdict.reason


@pytest.mark.parametrize(
    "kind", ["host", "event_record", "event_wait", "child_graph", "mem_alloc", "conditional"]
)
def test_host_event_child_and_allocation_nodes_are_rejected(kind):
    verdict = judge_graph([kernel(0x1000), GraphNode(kind=kind)], SOLUTION)
    assert not verdict.accepted and kind in verdict.reason


def test_a_graph_without_any_kernel_is_rejected():
    verdict = judge_graph([GraphNode(kind="memset")], SOLUTION)
    assert not verdict.accepted and "no kernel" in verdict.reason


def test_a_graph_timing_row_pairs_replays_on_the_promotion_figure():
    from gates.evaluator.graph_timing import CALLS_PER_GRAPH, cold_calls, graph_row
    from operators.declaration import Workload

    times = {  # per replay, per call, milliseconds
        "baseline": {"warm": [0.0020] * 4, "cold": [0.0040] * 4},
        "candidate": {"warm": [0.0019, 0.0019, 0.0018, 0.0019], "cold": [0.0036] * 4},
    }
    workload = Workload(name="w", axes={"tokens": 4}, weight=2.0)
    row = graph_row(workload, times, "cold", 2, 4096, 0.5)
    assert row["method"] == "graph" and row["promotion_figure"] == "cold"
    close = pytest.approx
    assert row["candidate_median_us"] == close(1.9) and row["candidate_cold_us"] == close(3.6)
    assert row["paired_ratios"]["baseline"] == close([0.9] * 4)  # cold over cold, by pair
    assert row["candidate_round_medians_us"] == close([3.6, 3.6])
    assert abs(row["speedup"] - 2.0 / 1.9) < 1e-12
    l2 = 60 << 20
    assert cold_calls(1 << 30, l2) == CALLS_PER_GRAPH  # a big set is cold by itself
    assert cold_calls(200_000, l2) * 200_000 >= 8 * l2  # small sets: 8 x L2 between uses


def test_a_warm_graph_holds_only_as_many_calls_as_keep_its_sets_in_the_l2():
    """Twenty fresh 19 MB sets copied in before a replay would leave the first ones evicted by
    the time they are read: the "warm" figure of a large workload was a cold one, and a
    rotate_qk point it promoted was slower where the model reads its inputs from the L2."""
    from gates.evaluator.graph_timing import CALLS_PER_GRAPH, warm_calls

    l2 = 60 << 20
    assert warm_calls(100_000, l2) == CALLS_PER_GRAPH
    assert warm_calls(3 << 20, l2) == 10  # ten 3 MB sets fill half the L2
    assert warm_calls(19 << 20, l2) == 1
    assert warm_calls(1 << 30, l2) == 1  # a set past the L2: one call, as warm as it gets


def test_the_librarys_kernels_for_the_products_called_are_accepted_and_no_other():
    library = frozenset({0x7000})
    nodes = [kernel(0x7000, "nvjet_tst_gemm"), kernel(0x1000)]
    assert judge_graph(nodes, SOLUTION, library).accepted
    assert not judge_graph(nodes, SOLUTION).accepted, "a product the candidate never called"
    foreign = [kernel(0x7000, "nvjet_tst_gemm"), kernel(0x8000, "nvjet_tst_gemm_lookalike")]
    verdict = judge_graph(foreign, SOLUTION, library)
    assert not verdict.accepted and "node 1" in verdict.reason
