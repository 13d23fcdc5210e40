"""What a captured call may contain (CUDA): the verdict on a CUDA graph's node list.

A graph replay runs only its nodes; no Python of the solution runs during it. So when every
node is a kernel compiled by Triton from the solution's own sources (matched by CUfunction
handle), a device memset or a device-to-device copy, the replayed outputs were made by those
kernels alone, whatever the solution did at import or capture. Host nodes, host or managed
memory transfers, event, child-graph, allocation and conditional nodes are refused. This
module is pure (node descriptions in, verdict out) so it is tested on CPU with constructed
node lists; `graph_nodes.py` reads real graphs through cuda-bindings.
"""

from typing import Literal

from pydantic import BaseModel, ConfigDict

from gates.evaluator.detectors import CheatDetected

NodeKind = Literal[
    "kernel", "memset", "memcpy", "host", "event_record", "event_wait", "child_graph",
    "empty", "mem_alloc", "mem_free", "conditional", "other",
]  # fmt: skip
MemoryPlace = Literal["device", "host", "managed", "array", "unknown"]


class GraphRejected(CheatDetected):
    """The solution's captured call holds work other than its own Triton kernels, device
    memsets and device-to-device copies (a host callback, a host transfer, a foreign kernel
    such as an eager Torch fallback's), so its replays cannot vouch for its outputs."""


class GraphNode(BaseModel):
    """One node of a captured graph, as far as the verdict needs it."""

    model_config = ConfigDict(frozen=True)

    kind: NodeKind
    function: int | None = None  # CUfunction handle of a kernel node
    launch: tuple[int, ...] | None = None  # a kernel's grid, block and shared memory bytes
    name: str = ""  # kernel name, for messages
    source: MemoryPlace | None = None  # of a memcpy node
    target: MemoryPlace | None = None


class GraphVerdict(BaseModel):
    """Whether a captured graph may be trusted, and the first reason it may not."""

    model_config = ConfigDict(frozen=True)

    accepted: bool
    reason: str = ""
    kernels: int = 0


def judge_graph(
    nodes: list[GraphNode],
    solution_functions: frozenset[int],
    library_functions: frozenset[int] = frozenset(),
) -> GraphVerdict:
    """Accept only the solution's Triton kernels, the BLAS library's kernels for the products
    it called (where its task allows them), device memsets and D2D copies."""
    kernels = 0
    for index, node in enumerate(nodes):
        where = f"node {index} ({node.kind}{': ' + node.name if node.name else ''})"
        if node.kind == "kernel":
            allowed = solution_functions | library_functions
            if node.function is None or node.function not in allowed:
                return GraphVerdict(
                    accepted=False,
                    reason=f"{where} runs a kernel that is neither one of the solution's Triton "
                    "kernels nor the library's for a product it called",
                )
            kernels += 1
        elif node.kind == "memcpy":
            if node.source != "device" or node.target != "device":
                return GraphVerdict(
                    accepted=False,
                    reason=f"{where} copies {node.source} to {node.target} memory; only "
                    "device-to-device copies are allowed",
                )
        elif node.kind not in ("memset", "empty"):
            return GraphVerdict(accepted=False, reason=f"{where} is not allowed in a captured call")
    if kernels == 0:
        return GraphVerdict(accepted=False, reason="the captured call launches no kernel")
    return GraphVerdict(accepted=True, kernels=kernels)
