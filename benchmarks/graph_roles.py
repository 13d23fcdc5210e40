"""Roles timed side by side in CUDA graphs, for the kernel sweeps under benchmarks/.

Each role is captured as one graph of CALLS calls rotating over the caller's input sets, after
warm-up calls over every set; the graphs' replays are interleaved, so every role sees the same
clocks and the same state of the L2, and the figure is the median replay per call. A role that
cannot be captured or run is reported with its error, and the others are still timed. On a
CPU, `host_times` is the stand-in: host microseconds of one call each.

A helper of tile_sweep.py and sweep_space.py; it answers no question of its own.
"""

import statistics
import time
from collections.abc import Callable

import torch

CALLS = 40
REPLAYS = 20
WARMUP = 2


def call_with_settings(module, entry: str, settings: dict, *args, **params):
    """`module.entry(*args, **params)` with `settings` in every regime of the module's TUNING
    for this call only (TUNING is read at each call; a graph keeps the launch it captured)."""
    saved = {name: dict(regime) for name, regime in module.TUNING.items()}
    for regime in module.TUNING.values():
        regime.update(settings)
    try:
        return getattr(module, entry)(*args, **params)
    finally:
        module.TUNING.clear()
        module.TUNING.update(saved)


def error_line(error: Exception) -> str:
    lines = [line for line in str(error).splitlines() if line.strip()]
    return f"{type(error).__name__}: {(lines[-1] if lines else '')[:200]}"


def graph_times(
    roles: dict[str, Callable],
    input_sets: list,
    *extra,
    calls: int = CALLS,
    replays: int = REPLAYS,
    warmup: int | None = None,
) -> dict:
    """Median per-call us of each role (or why it could not be timed): one graph of `calls`
    calls each, each call given a set's inputs then `extra`, `replays` replays interleaved.
    `warmup` calls come first (by default one per set, at least WARMUP)."""
    warmups = max(WARMUP, len(input_sets)) if warmup is None else warmup
    graphs, times = {}, {}
    for name, function in roles.items():
        try:
            for index in range(warmups):
                function(*input_sets[index % len(input_sets)], *extra)
            torch.cuda.synchronize()
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                for index in range(calls):
                    function(*input_sets[index % len(input_sets)], *extra)
            graphs[name] = graph
        except Exception as error:  # one role's failure leaves the others timed
            times[name] = error_line(error)
    samples = {name: [] for name in graphs}
    for _ in range(replays):
        for name, graph in graphs.items():
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            graph.replay()
            end.record()
            samples[name].append((start, end))
    torch.cuda.synchronize()
    for name, pairs in samples.items():
        times[name] = statistics.median(s.elapsed_time(e) for s, e in pairs) * 1000.0 / calls
    return times


def host_times(roles: dict[str, Callable], input_sets: list) -> dict[str, float]:
    """The CPU stand-in: host microseconds of one call of each role."""
    times = {}
    for name, function in roles.items():
        try:
            started = time.perf_counter()
            function(*input_sets[0])
            times[name] = (time.perf_counter() - started) * 1e6
        except Exception as error:
            times[name] = error_line(error)
    return times
