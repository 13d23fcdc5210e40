"""The reference roles' calls, captured on the device before the solution is imported, and
the check that holds every later graph of theirs to them (the rule is
`detectors/reference_graphs.py`)."""

import random
from collections import Counter

from gates.evaluator.detectors.reference_graphs import (
    ReferenceGraphChanged,
    call_fingerprint,
    changed_reference,
)
from gates.evaluator.graph_nodes import graph_nodes
from gates.evaluator.graph_timing import capture, warm_up


def take_fingerprints(declaration, roles: dict, device, nonce: str) -> dict[str, dict]:
    """Per timed workload and reference role, the node multiset of one call captured after
    warm-up (which also compiles and autotunes the role's kernels before the import)."""
    seeds = random.Random(f"fingerprints {nonce}")
    fingerprints: dict[str, dict[str, Counter]] = {}
    for workload in declaration.workloads:
        draw = declaration.make_input_sets
        drawn = draw(workload, 1, seeds.getrandbits(31), "normal", device)[0]
        inputs = [t.clone() for t in drawn]  # laid out as graph timing's buffers are
        fingerprints[workload.name] = {}
        for role, function in roles.items():
            warm_up(function, inputs, declaration.params)
            graph, _ = capture(function, [inputs], declaration.params)
            nodes = graph_nodes(graph.raw_cuda_graph())
            fingerprints[workload.name][role] = call_fingerprint(nodes)
            del graph
    return fingerprints


class ReferenceInspection:
    """Holds each graph of one reference role, for one workload, to the fingerprint taken
    before the import."""

    def __init__(self, role: str, workload: str, fingerprint: Counter) -> None:
        self.role, self.workload, self.fingerprint = role, workload, fingerprint

    def __call__(self, graph, calls: int) -> None:
        reason = changed_reference(graph_nodes(graph.raw_cuda_graph()), self.fingerprint, calls)
        if reason is not None:
            raise ReferenceGraphChanged(
                f"{self.workload}: the {self.role}'s {reason}, against its call captured "
                "before the solution was imported"
            )
