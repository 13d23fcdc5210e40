"""The reference roles' graphs hold what those roles ran before the solution was imported (CUDA).

The baseline (and incumbent) the candidate is timed against live in the candidate's process,
and so do their private caches: which compiled kernel a layout maps to, Triton's compiled
kernels, the launch shapes chosen for them. A solution that fills one with a slower kernel
makes its rival slow without touching anything the identity snapshot watches. So before the
import, each reference role's call is captured once per timed workload and its nodes kept as
a multiset (kind, CUfunction handle, grid, block, shared memory, copy places); every graph of
that role timed afterwards must hold exactly that multiset once per call. Whatever the
solution changed in those roles' Python, their replays run the kernels, with the launch
shapes, they had before it existed (their scalar arguments are not compared: they must
still give the right outputs on every replayed set). This module is pure (node lists in,
reason out), tested on CPU with constructed nodes; `reference_fingerprints.py` takes the
fingerprints on the device.
"""

from collections import Counter

from gates.evaluator.detectors import CheatDetected
from gates.evaluator.detectors.cuda_graph import GraphNode


class ReferenceGraphChanged(CheatDetected):
    """A reference role's timed graph runs other kernels, launch shapes or nodes than the
    same role's call captured before the solution was imported: the solution changed the
    role it is timed against (a private cache, a compiled kernel, a launch configuration)."""


def call_fingerprint(nodes: list[GraphNode]) -> Counter:
    """The multiset of one captured call's nodes, as far as they decide what the device runs
    (a kernel's arguments other than its launch shape differ with its buffers)."""
    return Counter(_signature(node) for node in nodes)


def _signature(node: GraphNode) -> tuple:
    return (node.kind, node.function, node.launch, node.source, node.target)


def changed_reference(nodes: list[GraphNode], fingerprint: Counter, calls: int) -> str | None:
    """Why a reference role's graph of `calls` calls is not `calls` times its fingerprint, or
    None when it is."""
    expected = Counter({signature: count * calls for signature, count in fingerprint.items()})
    found = call_fingerprint(nodes)
    if found == expected:
        return None
    extra = found - expected
    missing = expected - found
    named = {_signature(node): node.name for node in nodes}
    parts = []
    if extra:
        parts.append(f"{sum(extra.values())} nodes it did not run before ({_first(extra, named)})")
    if missing:
        parts.append(f"{sum(missing.values())} of its earlier nodes missing")
    return f"a graph of {calls} calls has {' and '.join(parts)}"


def _first(nodes: Counter, named: dict) -> str:
    kind, function, launch, _, _ = next(iter(nodes))
    name = named.get(next(iter(nodes))) or (hex(function) if function else kind)
    return f"{kind} {name}" + (f" launched as {launch}" if launch else "")
