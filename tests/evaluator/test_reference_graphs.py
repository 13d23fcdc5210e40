"""The reference roles' graphs against their calls captured before the import, on constructed
node lists (the captures themselves need CUDA): the same kernels and launch shapes once per
call pass; a slower kernel, another launch shape, an extra launch or node, or a missing one
is named."""

from collections import Counter

from gates.evaluator.detectors.cuda_graph import GraphNode
from gates.evaluator.detectors.reference_graphs import call_fingerprint, changed_reference

FAST = 0x1000  # the compiled kernel the baseline ran before the import
SLOW = 0x2000  # another compiled kernel of the same source (a smaller block, say)
SHAPE = (64, 1, 1, 128, 1, 1, 0)


def kernel(function: int = FAST, launch: tuple = SHAPE, name: str = "_rms_norm_kernel"):
    return GraphNode(kind="kernel", function=function, launch=launch, name=name)


def before_import() -> Counter:
    return call_fingerprint([GraphNode(kind="memset"), kernel()])


def graph(calls: int, *changed: GraphNode) -> list[GraphNode]:
    nodes = [node for _ in range(calls) for node in (GraphNode(kind="memset"), kernel())]
    return nodes[: len(nodes) - len(changed)] + list(changed) if changed else nodes


def test_the_same_kernels_and_launch_shapes_once_per_call_pass_in_any_order():
    nodes = graph(20)
    assert changed_reference(nodes, before_import(), 20) is None
    assert changed_reference(list(reversed(nodes)), before_import(), 20) is None


def test_another_compiled_kernel_is_named():
    # A solution filled the baseline's private layout cache with a slower compiled kernel.
    reason = changed_reference(graph(20, kernel(SLOW)), before_import(), 20)
    assert reason is not None and "1 nodes it did not run before" in reason
    assert "_rms_norm_kernel" in reason and "1 of its earlier nodes missing" in reason


def test_the_same_kernel_launched_with_another_shape_is_named():
    reason = changed_reference(
        graph(20, kernel(launch=(64, 1, 1, 32, 1, 1, 0))), before_import(), 20
    )
    assert reason is not None and "(64, 1, 1, 32, 1, 1, 0)" in reason


def test_an_extra_launch_of_the_same_kernel_per_call_is_named():
    # Launching the honest kernel twice per call doubles the baseline's time; the node count
    # is held to the calls the evaluator made, not inferred from the graph.
    nodes = [node for _ in range(20) for node in (GraphNode(kind="memset"), kernel(), kernel())]
    reason = changed_reference(nodes, before_import(), 20)
    assert reason is not None and "20 nodes it did not run before" in reason


def test_a_missing_node_or_an_extra_foreign_node_is_named():
    assert changed_reference(graph(20)[:-1], before_import(), 20) is not None
    extra = graph(20) + [GraphNode(kind="host")]
    assert "host" in changed_reference(extra, before_import(), 20)


def test_fingerprints_that_cannot_be_taken_leave_a_note_and_no_check():
    """Before the import nothing of the solution has run, so a capture that fails there (here:
    no CUDA) is the machine's failing: the evaluation goes on, and says the roles' graphs went
    unchecked."""
    from types import SimpleNamespace

    import torch

    from gates.evaluator.candidate_run import _reference_fingerprints
    from operators import REGISTRY

    declaration = REGISTRY.declaration("rms_norm")
    guard = SimpleNamespace(notes=[])
    roles = {"baseline": declaration.preferred}
    assert _reference_fingerprints(declaration, roles, torch.device("cpu"), "n", guard) is None
    assert guard.notes and "reference roles' graphs go unchecked" in guard.notes[0]
