"""Exhaustive sweep of each catalog operator's declared tuning space on the GPU, with the
evaluator's style of timing, to measure how close the autotune agent's screen comes to the
best point of the space (issue 27: within 2% of the sweep's best, in at most 5 minutes).

Per operator:
1. The autotune screen exactly as the agent runs it (`python -m controller.screening.worker`,
   its compiling children included) over every point, on a fresh Triton cache: its wall time
   and its ranking.
2. The sweep, on the cache the screen filled: every point checked on one case per workload,
   then timed paired with the production kernel the way the evaluator times roles: warm graphs
   of 20 calls (12 placements, fresh inputs copied in before each replay) or one cold graph
   over enough buffers that 8 x the L2 passes between two uses of one, whichever the
   evaluator would promote on; replays alternate with the production kernel's; per workload
   the median of the paired ratios. The weighted figure is the model's time: each workload's
   ratio weighted by its calls x the production kernel's time.

Writes $OUT/sweep_<op>.json (best point, production, every point's figure, the screen's picks
and how far they are from the best) and prints one line per operator. From the repository root:
`OUT=/tmp/out python benchmarks/sweep_space.py [--operators rms_norm,rotate_qk]`.

A space too large for one device call is swept in shards: `--shard K/N` sweeps the points whose
index is K modulo N (shard 0 also runs the screen; the others compile their points ahead in
parallel first, as the screen does) and writes sweep_<op>.shard-K-of-N.json; `--merge N` then
joins the N shard files found in $OUT into sweep_<op>.json. The ratios are paired against the
production kernel within each shard, so shards timed in different calls stay comparable.

Its answer: docs/benchmarks.md, "The tune flow".
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sweep_timing import PairedTiming  # noqa: E402

EXIT_BAD_INPUT = 2
SUBMITTED = 3  # the autotune agent's default: the screen's best three go to the evaluator


def main(argv: list[str]) -> int:
    arguments = _parser().parse_args(argv)
    from operators import REGISTRY

    known = [declaration.name for declaration in _catalog()]
    chosen = arguments.operators.split(",") if arguments.operators else known
    unknown = [name for name in chosen if name not in known]
    if unknown:
        print(
            f"sweep_space: {unknown[0]!r} is no catalog operator with a tuning space; "
            f"use some of: {', '.join(known)}",
            file=sys.stderr,
        )
        return EXIT_BAD_INPUT
    try:
        shard = _shard(arguments.shard) if arguments.shard else None
    except ValueError:
        print(
            f"sweep_space: --shard {arguments.shard!r} is not K/N with 0 <= K < N",
            file=sys.stderr,
        )
        return EXIT_BAD_INPUT
    if arguments.merge is not None and arguments.merge < 1:
        print("sweep_space: --merge takes the number of shards, at least 1", file=sys.stderr)
        return EXIT_BAD_INPUT
    out = Path(os.environ.get("OUT") or arguments.out)
    import torch

    if not arguments.merge and not torch.cuda.is_available():
        print("sweep_space: needs a CUDA device (run it on the GPU machine)", file=sys.stderr)
        return EXIT_BAD_INPUT
    out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    for name in chosen:
        if arguments.merge:
            shards = [out / _shard_file(name, k, arguments.merge) for k in range(arguments.merge)]
            missing = [path.name for path in shards if not path.is_file()]
            if missing:
                print(f"sweep_space: cannot merge, {missing[0]} is not in {out}", file=sys.stderr)
                return EXIT_BAD_INPUT
            screen = None
            if arguments.screen_from:  # a later screen of the same space (a change to it)
                screen = json.loads(Path(arguments.screen_from).read_text())["screen"]
            result = merge_shards([json.loads(path.read_text()) for path in shards], screen)
            (out / f"sweep_{name}.json").write_text(json.dumps(result, indent=1) + "\n")
        else:
            result = sweep_operator(REGISTRY.declaration(name), arguments, shard)
            written = _shard_file(name, *shard) if shard else f"sweep_{name}.json"
            (out / written).write_text(json.dumps(result, indent=1) + "\n")
        print(_line(result), flush=True)
    print(f"sweep_space: {len(chosen)} operators in {time.monotonic() - started:.0f} s")
    return 0


def _shard(text: str) -> tuple[int, int]:
    index, count = (int(part) for part in text.split("/"))
    if not 0 <= index < count:
        raise ValueError(text)
    return index, count


def _shard_file(name: str, index: int, count: int) -> str:
    return f"sweep_{name}.shard-{index}-of-{count}.json"


def sweep_operator(declaration, arguments, shard: tuple[int, int] | None = None) -> dict:
    """The screen, then the sweep, of one operator's space (or of one shard of it, with the
    screen in shard 0 only); the result as a JSON document."""
    from controller.screening.report import ScreenedPoint, space_points
    from gates.tasks.generation import write_package
    from gates.tasks.solution import load_solution
    from gates.tuning.launch_settings import declared_settings

    scratch = Path(tempfile.mkdtemp(prefix=f"sweep-{declaration.name}-"))
    task, _ = write_package(declaration, scratch / "tasks")
    solution = load_solution(task / "solution")
    entry = next(s for s in solution.sources if s.path == solution.spec.entry_file)
    points = space_points(declared_settings(entry.content))
    listed = scratch / "points.json"
    listed.write_text(json.dumps(list(enumerate(points))))
    os.environ["TRITON_CACHE_DIR"] = str(scratch / "triton-cache")  # cold for the screen
    screen_file = scratch / "screen.jsonl"
    index, count = shard or (0, 1)
    if index != 0:  # no screen here: compile this shard's points side by side, as it would
        from controller.screening.worker import compile_ahead

        mine = scratch / "shard-points.json"
        mine.write_text(json.dumps([[i, p] for i, p in enumerate(points) if i % count == index]))
        compile_started = time.monotonic()
        compile_ahead(
            [str(task), str(task / "solution"), str(mine), str(screen_file), "--device", "cuda"],
            arguments.jobs,
            compile_started + arguments.screen_budget_s,
        )
        print(f"  compiled ahead in {time.monotonic() - compile_started:.0f} s", flush=True)
    command = [
        sys.executable,
        "-m",
        "controller.screening.worker",
        str(task),
        str(task / "solution"),
        str(listed),
        str(screen_file),
        "--device",
        "cuda",
        "--jobs",
        str(arguments.jobs),
        "--budget-s",
        str(arguments.screen_budget_s),
    ]
    screen_started = time.monotonic()
    screen = {"seconds": 0.0, "exit_code": None, "stderr_tail": "", "points": []}
    if index == 0:
        run = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
        lines = screen_file.read_text().splitlines() if screen_file.is_file() else []
        screen = {
            "seconds": round(time.monotonic() - screen_started, 1),
            "exit_code": run.returncode,
            "stderr_tail": run.stderr[-600:],
            "points": [ScreenedPoint.model_validate_json(line).model_dump() for line in lines],
        }
        print(f"  screen: {len(screen['points'])} points in {screen['seconds']} s", flush=True)
    sweep_started = time.monotonic()
    chosen = [i for i in range(len(points)) if i % count == index]
    deadline = sweep_started + (arguments.sweep_budget_s or float("inf"))
    swept, production_us = _sweep(
        declaration, solution, points, chosen, scratch, arguments.replays, deadline
    )
    seconds = time.monotonic() - sweep_started
    return _result(declaration.name, len(points), swept, screen, seconds, shard, production_us)


def merge_shards(parts: list[dict], screen: dict | None = None) -> dict:
    """The whole sweep from its shard files: their rows joined, the screen from shard 0
    unless another is given."""
    parts = sorted(parts, key=lambda part: part["shard"][0])
    rows = sorted((row for part in parts for row in part["rows"]), key=lambda r: r["index"])
    first = parts[0]
    seconds = sum(part["sweep_seconds"] for part in parts)
    return _result(
        first["operator"],
        first["points"],
        rows,
        screen or first["screen"],
        seconds,
        None,
        first["production_us"],
    )


def _sweep(declaration, solution, points, chosen, scratch: Path, replays: int, deadline: float):
    """The chosen points checked, then timed paired with the production kernel (point 0); the
    rows and the production kernel's median us and calls per workload. Points left when the
    deadline passes are rows with status `not_reached`, so a partial sweep says so."""
    import torch

    from controller.screening.screen import ContractCheck, forget_point, load_point

    device = torch.device("cuda")
    l2_bytes = torch.cuda.get_device_properties(device).L2_cache_size
    check = ContractCheck(declaration, declaration.workloads, device)
    production = load_point(solution, points[0], scratch / "points", "production")
    timers = [
        PairedTiming(declaration, w, production, l2_bytes, replays) for w in declaration.workloads
    ]
    rows = []
    started_all = time.monotonic()
    for done, index in enumerate(chosen):
        point = points[index]
        if done and done % 25 == 0:
            elapsed = time.monotonic() - started_all
            print(f"  swept {done}/{len(chosen)} points in {elapsed:.0f} s", flush=True)
        tag = f"sweep_{index}"
        row: dict = {"index": index, "point": point}
        if time.monotonic() >= deadline:
            rows.append({**row, "status": "not_reached"})
            continue
        started = time.monotonic()
        try:
            function = load_point(solution, point, scratch / "points", tag)
            problem = check.first_problem(function)
            if problem is not None:
                row.update(status="contract_failed", reason=problem[:300])
            else:
                row.update(status="timed", workloads={t.name: t.time(function) for t in timers})
        except Exception as error:  # a point that does not compile or launch
            lines = str(error).strip().splitlines()
            row.update(
                status="failed",
                reason=f"{type(error).__name__}: {lines[-1] if lines else ''}"[:300],
            )
            if not _device_usable(torch):
                row["reason"] += " (the device context failed: the sweep stops here)"
                rows.append(row)
                break
        finally:
            forget_point(tag)
        row["seconds"] = round(time.monotonic() - started, 3)
        rows.append(row)
    production_us = {  # what weighs the rows: the model's time, calls x production's time
        t.name: {
            "us": statistics.median(t.baseline_us) if t.baseline_us else None,
            "calls": t.weight,
        }
        for t in timers
    }
    return rows, production_us


def _model_time(rows: list[dict], production_us: dict) -> None:
    """Each timed row's model-time ratio: its workloads' ratios weighted by calls x the
    production kernel's time (the model's time), and that time in us."""
    if any(w["us"] is None for w in production_us.values()):
        return  # nothing was timed (a screen-only call): no row has a ratio to weigh
    weights = {name: w["calls"] * w["us"] for name, w in production_us.items()}
    for row in rows:
        if row["status"] == "timed":
            ratios = {name: w["ratio"] for name, w in row["workloads"].items()}
            row["model_time_ratio"] = sum(weights[n] * r for n, r in ratios.items()) / sum(
                weights.values()
            )
            row["weighted_us"] = sum(weights[n] * r for n, r in ratios.items())


def _device_usable(torch) -> bool:
    try:
        torch.cuda.synchronize()
    except Exception:
        return False
    return True


def _result(name, points: int, swept, screen, sweep_seconds, shard, production_us) -> dict:
    """The JSON document: best point, production, the screen's picks and their gaps to the
    best, and the raw rows a merge needs. Rows are weighed by `production_us`: the production
    kernel's median time x calls per workload, from the shard that ran first when merged."""
    from controller.screening.report import ScreenedPoint, ScreenReport, point_key

    _model_time(swept, production_us)
    screened = [ScreenedPoint.model_validate(point) for point in screen["points"]]

    timed = sorted(
        (r for r in swept if r["status"] == "timed"), key=lambda r: r["model_time_ratio"]
    )
    best = timed[0] if timed else None
    by_key = {point_key(r["point"]): r for r in timed}
    report = ScreenReport(device="cuda", timed=True, points=screened)
    picks = []
    for rank, pick in enumerate(report.ranked()[:SUBMITTED], start=1):
        row = by_key.get(point_key(pick.point))
        gap = row["model_time_ratio"] / best["model_time_ratio"] - 1 if row and best else None
        picks.append(
            {
                "rank": rank,
                "point": pick.point,
                "screen_weighted_us": pick.weighted_us,
                "sweep_model_time_ratio": row and row["model_time_ratio"],
                "gap_to_best": gap,
            }
        )
    gaps = [p["gap_to_best"] for p in picks if p["gap_to_best"] is not None]
    production = next((r for r in swept if r["index"] == 0), {})
    return {
        "operator": name,
        "points": points,
        "shard": list(shard) if shard else None,
        "production": {
            "point": production.get("point"),
            "weighted_us": production.get("weighted_us"),
        },
        "best": best,
        "best_ratio_to_production": best and best["model_time_ratio"],
        "failed": [r for r in swept if r["status"] not in ("timed", "not_reached")],
        "not_reached": sum(r["status"] == "not_reached" for r in swept),
        "sweep_seconds": round(sweep_seconds, 1),
        "screen": {
            "seconds": screen["seconds"],
            "exit_code": screen["exit_code"],
            "stderr_tail": screen["stderr_tail"],
            "counts": report.counts(),
            "reached": len(screened),
            "picks": picks,
            "first_pick_gap": picks[0]["gap_to_best"] if picks else None,
            "best_submitted_gap": min(gaps) if gaps else None,
            "points": [p.model_dump() for p in screened],
        },
        "ranking": [{k: r[k] for k in ("point", "model_time_ratio", "workloads")} for r in timed],
        "production_us": production_us,
        "rows": swept,
    }


def _line(result: dict) -> str:
    screen = result["screen"]
    best = result["best"]
    gap = screen["best_submitted_gap"]
    shown = f"{gap * 100:+.2f}%" if gap is not None else "n/a"
    ratio = f"{best['model_time_ratio']:.4f}" if best else "n/a"
    return (
        f"{result['operator']}: {result['points']} points; best {ratio} x production "
        f"{json.dumps(best['point']) if best else '-'}; screen {screen['seconds']} s "
        f"({screen['reached']} reached), best of its top {SUBMITTED} {shown} from the best; "
        f"sweep {result['sweep_seconds']} s"
        + (f" ({result['not_reached']} points not reached)" if result["not_reached"] else "")
    )


def _catalog():
    """The catalog operators whose production kernel declares a tuning space."""
    import importlib

    from gates.tuning.launch_settings import declared_settings
    from operators.catalog import CATALOG

    found = []
    for declaration in CATALOG:
        if declaration.preferred is None:
            continue
        module = importlib.import_module(declaration.preferred.__module__)
        settings = declared_settings(Path(module.__file__).read_text())
        if settings.point is not None and settings.space:
            found.append(declaration)
    return found


def _parser() -> argparse.ArgumentParser:
    from controller.agents.autotune_screen import default_jobs

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--operators", help="comma-separated operators (default: the catalog)")
    parser.add_argument("--out", default="runs/sweep", help="folder when $OUT is not set")
    parser.add_argument(
        "--jobs",
        type=int,
        default=default_jobs(),
        help="compiling processes of the screen (default: the autotune agent's)",
    )
    parser.add_argument("--replays", type=int, default=20, help="paired replays per workload")
    parser.add_argument("--screen-budget-s", type=float, default=270.0)
    parser.add_argument(
        "--sweep-budget-s", type=float, help="stop timing points after this long (reported)"
    )
    parser.add_argument("--shard", help="K/N: sweep only the points whose index is K mod N")
    parser.add_argument("--merge", type=int, help="join N shard files in $OUT into one result")
    parser.add_argument(
        "--screen-from", help="with --merge: take the screen from this sweep file instead"
    )
    return parser


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
