"""Call trees of the ATen ops the profiler recorded, built straight from its raw events.

`torch.profiler`'s own `events()` turns every raw event into a full FunctionEvent (shapes,
stacks, memory, flops, about 30 us each) before nesting them; the ATen recorder needs only
each op's name and which ops ran inside which. The nesting here follows torch's rule (per
thread, ordered by start and then longest first, an event is the child of the innermost open
one whose interval holds it; an asynchronous event is nobody's parent or child), and a trace
with events only torch's parser places (device activity, memory records) is left to it.
"""

from torch.autograd import DeviceType
from torch.autograd.profiler_util import _filter_name, _rewrite_name

TORCH_PARSES = frozenset({"[memory]", "[OutOfMemory]"})


class _Node:
    """An op in a call tree, with the parent and children named as torch's FunctionEvent
    names them, so `top_level_trees` reads both."""

    __slots__ = ("name", "cpu_parent", "cpu_children")

    def __init__(self, name: str) -> None:
        self.name, self.cpu_parent, self.cpu_children = name, None, []


def call_trees(result) -> list[tuple[str, set[str]]] | None:
    """(top-level ATen op, every ATen op name in its tree), in the profiler's order, from a
    `_ProfilerResult`; None when the trace holds events only torch's own parser places."""
    nodes: list[_Node] = []
    timed: list[tuple[int, int, int, int]] = []  # thread, start, end, node index
    names: dict[str, str] = {}
    for event in result.events():
        raw = event.name()
        if raw in TORCH_PARSES or event.linked_correlation_id() != 0:
            return None
        if _filter_name(raw) or getattr(event, "is_hidden_event", lambda: False)():
            continue
        if event.device_type() != DeviceType.CPU:
            return None
        name = names.get(raw)
        if name is None:
            name = names[raw] = _rewrite_name(name=raw, with_wildcard=True)
        nodes.append(_Node(name))
        thread = event.start_thread_id()
        if not event.is_async() and thread == event.end_thread_id():
            timed.append((thread, event.start_ns(), event.end_ns(), len(nodes) - 1))
    _nest(nodes, timed)
    return top_level_trees(nodes)


def top_level_trees(events) -> list[tuple[str, set[str]]]:
    """(top-level ATen op, every ATen op name in its tree) for each top-level op among
    `events` (these nodes, or torch's FunctionEvents)."""
    return [(_op_name(event), _tree_names(event)) for event in events if _is_top_level(event)]


def _nest(nodes: list[_Node], timed: list[tuple[int, int, int, int]]) -> None:
    timed.sort(key=lambda entry: (entry[0], entry[1], -entry[2]))  # stable, as torch's
    open_events: list[tuple[int, int]] = []  # end, node index
    thread = None
    for event_thread, start, end, index in timed:
        if event_thread != thread:
            thread, open_events = event_thread, []
        while open_events:
            parent_end, parent = open_events[-1]
            if start >= parent_end or end > parent_end:
                open_events.pop()
                continue
            nodes[index].cpu_parent = nodes[parent]
            nodes[parent].cpu_children.append(nodes[index])
            break
        open_events.append((end, index))


def _op_name(event) -> str:
    return event.name.split("::")[-1]


def _is_aten(event) -> bool:
    return "::" in event.name


def _is_top_level(event) -> bool:
    if not _is_aten(event):
        return False
    parent = event.cpu_parent
    while parent is not None:
        if _is_aten(parent):
            return False
        parent = parent.cpu_parent
    return True


def _tree_names(event) -> set[str]:
    names = {_op_name(event)} if _is_aten(event) else set()
    for child in event.cpu_children:
        names |= _tree_names(child)
    return names
