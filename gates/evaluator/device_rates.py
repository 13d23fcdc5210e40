"""What the device's own rates are when timing starts: its SM clock and its copy bandwidth,
reported with every timing (a throttled device, the byte floor); the probes in
`benchmarks/` read them too."""

import math

import torch

BANDWIDTH_BYTES = 1 << 30


def measure_sm_clock_mhz() -> float:
    """The SM clock in MHz, from timing a kernel that spins a known number of cycles.

    Reported with every timing so a reader can tell a throttled device from a slow kernel.
    """
    cycles = 20_000_000
    torch.cuda._sleep(cycles)  # the first spin lifts an idle clock
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    start.record()
    torch.cuda._sleep(cycles)
    end.record()
    end.synchronize()
    return round(cycles / start.elapsed_time(end) / 1e3, 1)


def measure_bandwidth(device) -> float:
    """Device-memory bandwidth in bytes per millisecond, from timed copies (best of five)."""
    source = torch.empty(BANDWIDTH_BYTES // 4, dtype=torch.int32, device=device)
    target = torch.empty_like(source)
    best = math.inf
    for _ in range(5):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        target.copy_(source)
        end.record()
        end.synchronize()
        best = min(best, start.elapsed_time(end))
    del source, target
    return 2 * BANDWIDTH_BYTES / best
