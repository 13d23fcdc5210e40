"""Which host ranges were open at given moments on given threads, found in one sweep: the
stack of ranges a kernel's launch ran inside is what attributes that kernel."""

from collections import defaultdict
from collections.abc import Sequence

from controller.profiling.timeline import HostRange

HostPoint = tuple[int, float]  # (thread, time in us)


def enclosing_ranges(
    ranges: Sequence[HostRange], points: Sequence[HostPoint]
) -> list[list[HostRange]]:
    """For each (thread, time) point, the ranges of that thread holding it (start <= time <
    end), outermost first. A point on a thread that recorded no range is looked up on the
    thread that recorded the most (a launch the profiler could not place on its thread)."""
    by_thread: dict[int, list[HostRange]] = defaultdict(list)
    for item in ranges:
        if item.end_us > item.start_us:
            by_thread[item.thread].append(item)
    busiest = max(by_thread, key=lambda thread: len(by_thread[thread]), default=None)
    wanted: dict[int, list[int]] = defaultdict(list)
    for index, (thread, _time) in enumerate(points):
        wanted[thread if thread in by_thread else busiest].append(index)
    stacks: list[list[HostRange]] = [[] for _ in points]
    for thread, indices in wanted.items():
        if thread is None:
            continue
        opened = sorted(by_thread[thread], key=lambda item: (item.start_us, -item.end_us))
        indices.sort(key=lambda index: points[index][1])
        stack: list[HostRange] = []
        next_range = 0
        for index in indices:
            time = points[index][1]
            while next_range < len(opened) and opened[next_range].start_us <= time:
                starting = opened[next_range]
                while stack and stack[-1].end_us <= starting.start_us:
                    stack.pop()
                stack.append(starting)
                next_range += 1
            while stack and stack[-1].end_us <= time:
                stack.pop()
            stacks[index] = [item for item in stack if item.start_us <= time < item.end_us]
    return stacks
