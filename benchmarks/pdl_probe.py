"""What programmatic dependent launch (PDL) would give the model's small kernels in a CUDA graph.

The installed `h200` forward runs about 3,300 kernels a replay, most of them a few
microseconds long, and the device idles between them (0.9 ms at batch 8, 1.4 ms at batch 1).
With PDL a kernel may start while the one before it drains and waits on the device
(`griddepcontrol.wait`) before reading its inputs, so launch latency and prologue overlap the
predecessor's tail. This probe measures that on chains of dependent kernels captured in one
CUDA graph, before anything ships with it:

- `elementwise`: an elementwise kernel over rows x 1024 BF16, each launch reading the output
  of the one before, launched plainly, with the wait but no PDL (what the wait costs), with
  PDL and the wait first, and with PDL, the wait, then an early signal to the next launch;
- `after_product`: the same kernel after each of a chain of cuBLAS products (`F.linear`,
  rows x 1024 x 1024), PDL on the Triton launches only.

Every variant's final output must equal the plain chain's bit for bit (a dependent kernel that
read too early would show here). Per-launch microseconds: the graph replay's CUDA-event time
divided by the launches in it, median of 20 replays.

Run from the repository root on a Hopper GPU:
    python benchmarks/pdl_probe.py
Writes $OUT/pdl_probe.json after every measurement when $OUT is set.
"""

import json
import os
import statistics
import sys
from pathlib import Path

import torch
import torch.nn.functional as F
import triton
import triton.language as tl

WIDTH = 1024
CHAIN = 256
REPLAYS = 20
ROWS = (50, 400, 3200)
VARIANTS = {
    "plain": {"wait": False, "pdl": False, "early": False},
    "wait_only": {"wait": True, "pdl": False, "early": False},
    "pdl_wait": {"wait": True, "pdl": True, "early": False},
    "pdl_wait_early": {"wait": True, "pdl": True, "early": True},
}


@triton.jit
def _scaled_shift(
    source, bias, target, count, WAIT: tl.constexpr, EARLY: tl.constexpr, BLOCK: tl.constexpr
):
    if WAIT:
        tl.extra.cuda.gdc_wait()
    if EARLY:
        tl.extra.cuda.gdc_launch_dependents()
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    inside = offsets < count
    value = tl.load(source + offsets, mask=inside).to(tl.float32)
    shift = tl.load(bias + offsets % 1024, mask=inside).to(tl.float32)
    tl.store(target + offsets, (value * 0.5 + shift).to(tl.bfloat16), mask=inside)


def _step(source, bias, target, variant: dict) -> None:
    block = 2048
    count = source.numel()
    _scaled_shift[(triton.cdiv(count, block),)](
        source,
        bias,
        target,
        count,
        WAIT=variant["wait"],
        EARLY=variant["early"],
        BLOCK=block,
        launch_pdl=variant["pdl"],
    )


def _chain(kind: str, rows: int, variant: dict):
    """A step function running the chain once, and the tensor holding its result."""
    generator = torch.Generator(device="cuda").manual_seed(rows)
    first = torch.randn(rows, WIDTH, device="cuda", generator=generator).to(torch.bfloat16)
    buffers = [first.clone(), torch.empty_like(first)]
    bias = torch.randn(WIDTH, device="cuda", generator=generator).to(torch.bfloat16)
    weight = (torch.randn(WIDTH, WIDTH, device="cuda", generator=generator) / 32).to(torch.bfloat16)
    launches = CHAIN if kind == "elementwise" else 2 * (CHAIN // 2)

    def run() -> torch.Tensor:
        buffers[0].copy_(first)
        current = 0
        if kind == "elementwise":
            for _ in range(CHAIN):
                _step(buffers[current], bias, buffers[1 - current], variant)
                current = 1 - current
        else:
            for _ in range(CHAIN // 2):
                product = F.linear(buffers[current], weight)
                _step(product, bias, buffers[1 - current], variant)
                current = 1 - current
        return buffers[current]

    return run, launches


def _measure(kind: str, rows: int, name: str) -> tuple[float, torch.Tensor]:
    run, launches = _chain(kind, rows, VARIANTS[name])
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            run()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        result = run()
    for _ in range(3):
        graph.replay()
    pairs = []
    for _ in range(REPLAYS):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        pairs.append((start, end))
    torch.cuda.synchronize()
    replay_ms = statistics.median(s.elapsed_time(e) for s, e in pairs)
    return replay_ms * 1e3 / launches, result.clone()


def main() -> int:
    out = os.environ.get("OUT")
    report: dict = {
        "device": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "triton": triton.__version__,
        "chain": CHAIN,
        "results": [],
    }

    def save() -> None:
        if out:
            Path(out, "pdl_probe.json").write_text(json.dumps(report, indent=2))

    for kind in ("elementwise", "after_product"):
        for rows in ROWS:
            baseline = None
            for name in VARIANTS:
                entry = {"kind": kind, "rows": rows, "variant": name}
                try:
                    per_launch, result = _measure(kind, rows, name)
                except Exception as error:  # a variant the stack cannot capture is a finding
                    entry["error"] = f"{type(error).__name__}: {error}"[:400]
                    report["results"].append(entry)
                    print(entry, flush=True)
                    save()
                    continue
                if baseline is None:
                    baseline = (per_launch, result)
                entry["us_per_launch"] = round(per_launch, 3)
                entry["against_plain"] = round(baseline[0] / per_launch, 4)
                entry["identical_to_plain"] = bool(torch.equal(result, baseline[1]))
                report["results"].append(entry)
                print(entry, flush=True)
                save()
    return 0


if __name__ == "__main__":
    sys.exit(main())
