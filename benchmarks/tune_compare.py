"""Per workload, the production kernel, the tuned kernel a tune run exported,
`torch.compile(dynamic=False)` of the Torch reference and, where the operator declares one,
its stock PyTorch formulation (SDPA for attention), each timed as CUDA-graph per-call time in
one process. Compiling with static shapes per workload keeps a recompile from timing a
dynamic-shape kernel (two runs once measured 13.7 and 24.4 us for one rotate_qk workload).

Run from the repository root on a GPU machine after `controller tune run`:
`python benchmarks/tune_compare.py --runs-dir RUNS --out OUT`. For each catalog operator the
latest finished tune run under RUNS is used; an operator without an export compares production
and compile only. Per role: warm-up calls, then one CUDA graph of CALLS calls on the same
inputs (warm L2, as a model's decode step runs), replayed REPLAYS times with the roles
interleaved; the per-call time is the median replay time over CALLS. The tuned kernel's
outputs are checked against the operator's contract before it is timed.

Its answer: docs/benchmarks.md, "Catalog kernels against eager and compile".
"""

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

import operators  # noqa: E402,F401  (selects the Triton interpreter before triton.language loads)
from gates.evaluator import loading  # noqa: E402
from gates.tasks.solution import load_solution  # noqa: E402
from operators.catalog import CATALOG  # noqa: E402
from operators.catalog.checking import first_violation  # noqa: E402

CALLS = 20
REPLAYS = 200
WARMUP = 5


def latest_export(runs_dir: Path, operator: str) -> tuple[Path | None, dict]:
    """The newest tune run of `operator` under `runs_dir` that exported a solution (else the
    newest run): its export (or None) and its state."""
    runs = []
    for manifest in sorted(runs_dir.glob("tune-*/manifest.json")):
        stored = json.loads(manifest.read_text())["manifest"]
        if stored["work_item"]["operator"] == operator:
            runs.append(manifest.parent)
    if not runs:
        return None, {"run": None}
    exported = [run for run in runs if (run / "export" / "solution").is_dir()]
    run = (exported or runs)[-1]
    state = json.loads((run / "state.json").read_text()) if (run / "state.json").is_file() else {}
    export = run / "export" / "solution"
    status = {"run": run.name, "state": state.get("state"), "reason": state.get("reason")}
    return (export if export.is_dir() else None), status


def per_call_us(roles: dict, inputs: list, params: dict) -> dict[str, float]:
    """Median per-call microseconds of each role from interleaved graph replays."""
    graphs = {}
    for name, function in roles.items():
        for _ in range(WARMUP):
            function(*inputs, **params)
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for _ in range(CALLS):
                function(*inputs, **params)
        graphs[name] = graph
    events = {name: [] for name in roles}
    for _ in range(REPLAYS):
        for name, graph in graphs.items():
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            graph.replay()
            end.record()
            events[name].append((start, end))
    torch.cuda.synchronize()
    return {
        name: statistics.median(s.elapsed_time(e) for s, e in pairs) * 1000.0 / CALLS
        for name, pairs in events.items()
    }


def compare(declaration, export: Path | None) -> list[dict]:
    device = torch.device("cuda")
    roles = {"production": declaration.preferred}
    if declaration.stock is not None:
        roles["stock"] = declaration.stock
    problem = None
    if export is not None:
        solution = load_solution(export)
        folder = loading.write_sources(solution, Path(tempfile.mkdtemp()) / "tuned")
        roles["tuned"] = loading.import_entry(solution, folder, f"tuned_{declaration.name}")
    rows = []
    for workload in declaration.workloads:
        if "tuned" in roles:
            violation = first_violation(declaration, roles["tuned"], workload, 0, "normal", device)
            problem = violation.describe() if violation else None
        inputs = declaration.make_inputs(workload, seed=0, device=device)
        torch._dynamo.reset()  # each workload compiles its own static-shape graph
        compiled = torch.compile(declaration.reference, dynamic=False)
        times = per_call_us(
            {k: v for k, v in roles.items() if not (k == "tuned" and problem)}
            | {"compile": compiled},
            inputs,
            declaration.params,
        )
        rows.append(
            {
                "operator": declaration.name,
                "workload": workload.name,
                **{f"{role}_us": value for role, value in times.items()},
                "tuned_contract": problem or ("ok" if "tuned" in roles else "no export"),
            }
        )
        print(f"  {declaration.name}/{workload.name}: {times}", file=sys.stderr)
    return rows


def markdown(rows: list[dict], statuses: dict[str, dict]) -> str:
    lines = [
        f"CUDA-graph per-call us (median of {REPLAYS} replays of {CALLS} calls, warm).",
        "",
        "| operator | workload | production | tuned | torch.compile | stock | "
        "tuned/production | best of compile and stock / tuned |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for row in rows:
        tuned, stock = row.get("tuned_us"), row.get("stock_us")
        ratio = f"{row['production_us'] / tuned:.3f}x" if tuned else "-"
        user = min(row["compile_us"], stock or row["compile_us"])
        versus_user = f"{user / tuned:.3f}x" if tuned else "-"
        lines.append(
            f"| {row['operator']} | {row['workload']} | {row['production_us']:.2f} | "
            f"{f'{tuned:.2f}' if tuned else '-'} | {row['compile_us']:.2f} | "
            f"{f'{stock:.2f}' if stock else '-'} | {ratio} | {versus_user} |"
        )
    lines += ["", "| operator | run | state | stop reason |", "| --- | --- | --- | --- |"]
    for operator, status in statuses.items():
        lines.append(
            f"| {operator} | {status.get('run')} | {status.get('state')} | {status.get('reason')} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs-dir", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--operators", nargs="*", help="only these operators (default: all)")
    arguments = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("tune_compare: no CUDA device here", file=sys.stderr)
        return 2
    rows, statuses = [], {}
    for declaration in CATALOG:
        if arguments.operators and declaration.name not in arguments.operators:
            continue
        export, statuses[declaration.name] = latest_export(arguments.runs_dir, declaration.name)
        rows += compare(declaration, export)
    arguments.out.mkdir(parents=True, exist_ok=True)
    names = "_".join(statuses) or "none"
    (arguments.out / f"compare_{names}.json").write_text(json.dumps(rows, indent=2))
    (arguments.out / f"compare_{names}.md").write_text(markdown(rows, statuses))
    print(markdown(rows, statuses))
    return 0


if __name__ == "__main__":
    sys.exit(main())
