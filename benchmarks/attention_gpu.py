"""split_kv_attention on the H200: the grouped, split-KV kernel against production and SDPA.

Run from the repository root on a GPU machine: `OUT=$OUT python benchmarks/attention_gpu.py`
(about a minute; writes $OUT/attention_gpu.json and prints a table). Per attention workload it
first holds the new kernel (benchmarks/split_kv_attention_flash/, the parts of the one file the
scripted tune session ships) to the operator's contract on every input distribution, then
times as CUDA-graph per-call time: the production kernel, the new kernel at its TUNING, BF16
`scaled_dot_product_attention` over the concatenated K/V (GQA) as a PyTorch user writes it, and
a sweep of the new kernel's launch settings (each variant checked before it is timed). A graph
holds CALLS calls rotating over INPUT_SETS input sets (warm L2); roles' replays are
interleaved; the figure is the median replay over CALLS. `--device cpu --quick` runs the same
code under the Triton interpreter at scaled-down sizes (host clock, no graphs, one variant),
to check the script itself.
"""

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCHMARKS.parent))
sys.path.insert(0, str(BENCHMARKS))  # its siblings by their own names, whoever imports it

import torch  # noqa: E402,I001  (operators before the kernel module: it selects the interpreter)
import torch.nn.functional as F  # noqa: E402
from pydantic import BaseModel  # noqa: E402

import operators  # noqa: E402,F401  (selects the Triton interpreter before triton.language loads)
import attention_session  # noqa: E402
import split_kv_attention_flash as flash  # noqa: E402
from operators.catalog.checking import first_violation, scaled_down  # noqa: E402
from operators.catalog.split_kv_attention import DECLARATION  # noqa: E402
from operators.declaration import DISTRIBUTIONS, OperatorDeclaration, Workload  # noqa: E402

CALLS = 48
INPUT_SETS = 4
REPLAYS = 25
WARMUP = 3
SWEEP_SECONDS = 60.0
"""Compiling a variant takes seconds; a workload's variants past this much time are skipped
(a later workload reuses what an earlier one compiled)."""

SPILL_FREE_FIRST = (
    (32, 32, 4, 2),
    (32, 16, 4, 2),
    (32, 32, 8, 2),
    (64, 16, 8, 2),
    (64, 32, 8, 2),
    (64, 64, 8, 2),
    (64, 32, 4, 2),
    (128, 32, 8, 2),
)
"""(rows, keys, warps, stages), those an offline sm_90a compile (`flash_registers.py`) finds
spill-free or nearly so first: spills, not the tiles, decided the first H200 figures."""
SHORT_VARIANTS = [
    {"rows": rows, "keys": keys, "num_warps": warps, "num_stages": stages, "programs": programs}
    for rows, keys, warps, stages in SPILL_FREE_FIRST
    for programs in (132, 264, 1)
]
"""Launch settings tried for the action calls (50 query tokens); programs 1 never splits."""
LONG_VARIANTS = [
    {"rows": rows, "keys": keys, "num_warps": warps, "num_stages": stages, "programs": programs}
    for rows, keys, warps, stages in SPILL_FREE_FIRST
    for programs in (1, 132)
]
"""Launch settings tried for the prefix calls (576 query tokens); programs 1 never splits."""
MERGE_VARIANTS = [{"merge_rows": 16, "merge_dim": 64}, {"merge_rows": 64, "merge_dim": 32}]


class Timing(BaseModel):
    """One role's CUDA-graph per-call time at one workload (host seconds on the CPU)."""

    role: str
    settings: dict | None = None
    us: float | None = None
    problem: str | None = None


class WorkloadResult(BaseModel):
    workload: str
    axes: dict[str, int]
    contract: str
    timings: list[Timing]


class Report(BaseModel):
    device: str
    torch: str
    triton: str
    session_current: bool
    tuning: dict
    seconds: float
    results: list[WorkloadResult]


def sdpa(q, k_cache, v_cache, k, v, scale: float) -> torch.Tensor:
    """What a PyTorch user writes: BF16 SDPA over the joined keys and values, grouped-query."""
    keys = torch.cat((k_cache, k), dim=2)
    values = torch.cat((v_cache, v), dim=2)
    return F.scaled_dot_product_attention(q, keys, values, scale=scale, enable_gqa=True)


def variant_kernel(settings: dict) -> Callable:
    def kernel(q, k_cache, v_cache, k, v, scale: float) -> torch.Tensor:
        return flash.attend(q, k_cache, v_cache, k, v, scale, settings)

    return kernel


def contract_problem(
    declaration: OperatorDeclaration, kernel: Callable, workload: Workload, device
) -> str | None:
    """The first contract violation over every input distribution (or the error), or None."""
    for distribution in DISTRIBUTIONS:
        try:
            violation = first_violation(declaration, kernel, workload, 1, distribution, device)
        except Exception as error:  # a kernel that cannot run is reported
            return f"{distribution}: {_error_line(error)}"
        if violation is not None:
            return f"{distribution}: {violation.describe()}"
    return None


def _error_line(error: Exception) -> str:
    lines = [line for line in str(error).splitlines() if line.strip()]
    return f"{type(error).__name__}: {(lines[-1] if lines else '')[:200]}"


def graph_times(roles: dict[str, Callable], input_sets: list, scale: float) -> dict:
    """Median per-call us of each role (or why it could not be timed): one graph of CALLS
    calls each, replays interleaved."""
    graphs, times = {}, {}
    for name, function in roles.items():
        try:
            for index in range(WARMUP):
                function(*input_sets[index % len(input_sets)], scale)
            torch.cuda.synchronize()
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                for index in range(CALLS):
                    function(*input_sets[index % len(input_sets)], scale)
            graphs[name] = graph
        except Exception as error:  # one role's failure leaves the others timed
            times[name] = _error_line(error)
    samples = {name: [] for name in graphs}
    for _ in range(REPLAYS):
        for name, graph in graphs.items():
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            graph.replay()
            end.record()
            samples[name].append((start, end))
    torch.cuda.synchronize()
    for name, pairs in samples.items():
        times[name] = statistics.median(s.elapsed_time(e) for s, e in pairs) * 1000.0 / CALLS
    return times


def host_times(roles: dict[str, Callable], input_sets: list, scale: float) -> dict[str, float]:
    """The CPU stand-in: host microseconds of one call of each role."""
    times = {}
    for name, function in roles.items():
        started = time.perf_counter()
        function(*input_sets[0], scale)
        times[name] = (time.perf_counter() - started) * 1e6
    return times


def measure(
    declaration: OperatorDeclaration, workload: Workload, device, quick: bool, deadline: float
) -> WorkloadResult:
    scale = declaration.params["scale"]
    tokens = workload.axes["tokens"]
    default = flash.settings_for(tokens)
    problem = contract_problem(declaration, flash.split_kv_attention_triton, workload, device)
    roles: dict[str, Callable] = {"production": declaration.preferred, "sdpa": sdpa}
    timings = {}
    if problem is None:
        roles["new"] = flash.split_kv_attention_triton
    variants = [] if problem else (SHORT_VARIANTS if tokens <= 64 else LONG_VARIANTS)
    variants = [
        {**variant, **merge}
        for variant in variants
        for merge in MERGE_VARIANTS[: 1 if variant["programs"] == 1 else None]
    ]
    if quick:
        variants = [{**default, "programs": 64}]
    for number, variant in enumerate(variants):
        name = f"variant{number}"
        if time.time() > deadline:
            timings[name] = Timing(role=name, settings=variant, problem="skipped: sweep time")
            continue
        kernel = variant_kernel({**default, **variant})
        try:
            violation = first_violation(declaration, kernel, workload, 2, "large", device)
        except Exception as error:  # a variant that cannot compile is reported
            violation = _error_line(error)
        if violation is None:
            roles[name] = kernel
        else:
            text = violation if isinstance(violation, str) else violation.describe()
            timings[name] = Timing(role=name, settings=variant, problem=text)
    input_sets = [
        declaration.make_inputs(workload, seed=seed, device=device) for seed in range(INPUT_SETS)
    ]
    timer = host_times if device.type == "cpu" else graph_times
    for name, figure in timer(roles, input_sets, scale).items():
        settings = default if name == "new" else None
        if name.startswith("variant"):
            settings = variants[int(name.removeprefix("variant"))]
        timed = isinstance(figure, float)
        timings[name] = Timing(
            role=name,
            settings=settings,
            us=figure if timed else None,
            problem=None if timed else figure,
        )
    ordered = sorted(timings.values(), key=lambda t: (t.role.startswith("variant"), t.role))
    return WorkloadResult(
        workload=workload.name,
        axes=workload.axes,
        contract=problem or "ok",
        timings=ordered,
    )


def _us(timing: Timing | None) -> str:
    return f"{timing.us:.2f}" if timing is not None and timing.us is not None else "-"


def table(results: list[WorkloadResult]) -> str:
    lines = [
        "| workload | production us | new us | best variant us | SDPA us | contract |",
        "| --- | ---: | ---: | ---: | ---: | --- |",
    ]
    for result in results:
        by_role = {t.role: t for t in result.timings}
        timed = [t for t in result.timings if t.role.startswith("variant") and t.us is not None]
        best = min(timed, key=lambda t: t.us, default=None)

        best_text = f"{best.us:.2f} {best.settings}" if best else "-"
        production, new, sdpa_us = (
            _us(by_role.get(role)) for role in ("production", "new", "sdpa")
        )
        lines.append(
            f"| {result.workload} | {production} | {new} | {best_text} | {sdpa_us} | "
            f"{result.contract} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--quick", action="store_true", help="scaled-down sizes, one variant")
    parser.add_argument("--out", default=os.environ.get("OUT", "/tmp/attention_gpu"))
    args = parser.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        print("attention_gpu: no CUDA device here; use --device cpu --quick", file=sys.stderr)
        return 2
    if args.device == "cpu" and not args.quick:
        print("attention_gpu: the interpreter needs --quick sizes", file=sys.stderr)
        return 2
    device = torch.device(args.device)
    started = time.time()
    declaration = scaled_down(DECLARATION) if args.quick else DECLARATION
    session_current = attention_session.SESSION_FILE.is_file() and (
        attention_session.SESSION_FILE.read_text() == attention_session.session_text()
    )
    if not session_current:
        print("attention_gpu: the session file is stale (python benchmarks/attention_session.py)")
    results = []
    for workload in declaration.workloads:
        deadline = time.time() + SWEEP_SECONDS
        result = measure(declaration, workload, device, args.quick, deadline)
        results.append(result)
        for timing in result.timings:
            figure = f"{timing.us:8.2f} us" if timing.us is not None else timing.problem
            print(f"  {result.workload} {timing.role:10s} {figure}  {timing.settings or ''}")
    report = Report(
        device=torch.cuda.get_device_name() if device.type == "cuda" else "cpu (interpreter)",
        torch=torch.__version__,
        triton=__import__("triton").__version__,
        session_current=session_current,
        tuning=flash.TUNING,
        seconds=round(time.time() - started, 1),
        results=results,
    )
    print(table(results))
    print(f"{report.seconds} s (default settings: {flash.TUNING})")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "attention_gpu.json").write_text(report.model_dump_json(indent=2) + "\n")
    print(f"wrote {out / 'attention_gpu.json'}")
    return 0 if all(result.contract == "ok" for result in results) else 1


if __name__ == "__main__":
    sys.exit(main())
