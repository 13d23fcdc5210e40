"""Write the scripted tune session that submits kernels/split_kv_attention_split_dim.py.

A named entry point for `solution_session.py` (one attempt: read the incumbent, write the
kernel module over it): `python kernels/attention_session.py` (`--check` exits 1 when the
session file is stale). `--tuning-from attention_gpu.json` first writes the fastest timed
variant of each regime in that report of `benchmarks/attention_gpu.py` into the kernel's
TUNING (a regime no variant was timed for keeps its settings), then the session; with
`--margins attention_margin.json` only among the score chunks and weight parts that report
passed everywhere (benchmarks/attention_margin.py).
"""

import argparse
import json
import re
import sys
from pathlib import Path

import solution_session

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gates.tuning.launch_settings import declared_settings, with_point  # noqa: E402

OPERATOR = "split_kv_attention"
KERNEL_FILE = Path(__file__).resolve().parent / "split_kv_attention_split_dim.py"
SESSION_FILE = solution_session.session_file(OPERATOR)
SOLUTION_PATH = solution_session.solution_path(OPERATOR)


SIBLINGS = solution_session.sibling_modules(KERNEL_FILE)
"""The Triton programs' module, shipped beside the operator file."""


def solution_source(kernel_source: str) -> str:
    return solution_session.solution_source(kernel_source, OPERATOR, SIBLINGS)


def session_text() -> str:
    return solution_session.session_text(OPERATOR, KERNEL_FILE)


def fastest_per_regime(
    report: dict, space: dict[str, tuple] | None, numerics: set[tuple[int, int]] | None = None
) -> dict[str, dict]:
    """Each regime's fastest timed settings (by short name) in a sweep report: its variants
    and the kernel at the TUNING it was swept with (`new`), so a variant slower than that is
    never written; among those inside the kernel's declared space (a sweep may time points
    the space leaves out) and, when given, with (score_chunks, weight_parts) among
    `numerics`."""
    best: dict[str, tuple[float, dict]] = {}
    for result in report["results"]:
        for timing in result["timings"]:
            timed = timing["role"].startswith("variant") or timing["role"] == "new"
            if not timed or timing["us"] is None or not timing.get("settings"):
                continue
            settings = timing["settings"]
            if not _inside(space, result["regime"], settings):
                continue
            if numerics is not None and _numerics(settings) not in numerics:
                continue
            if result["regime"] not in best or timing["us"] < best[result["regime"]][0]:
                best[result["regime"]] = (timing["us"], settings)
    return {regime: settings for regime, (_, settings) in best.items()}


def _inside(space: dict[str, tuple] | None, regime: str, settings: dict) -> bool:
    if space is None:
        return True
    return all(value in space.get(f"{regime}_{name}", (value,)) for name, value in settings.items())


def _numerics(settings: dict) -> tuple[int, int]:
    return settings["score_chunks"], settings.get("weight_parts", 2)


def safest_numerics(margins: dict) -> set[tuple[int, int]]:
    """The (score_chunks, weight_parts) whose split-dim kernel passed every case of every
    workload in an attention_margin.json report; when none did, the one whose worst ratio
    over all workloads is least."""
    worst: dict[tuple[int, int], float] = {}
    failed: set[tuple[int, int]] = set()
    for row in margins["rows"]:
        found = MARGIN_KERNEL.fullmatch(row["kernel"])
        if found is None:
            continue
        key = (int(found.group(1)), int(found.group(2) or 2))
        worst[key] = max(worst.get(key, 0.0), row["worst_ratio"])
        if row["passed"] < row["cases"]:
            failed.add(key)
    passing = set(worst) - failed
    return passing or ({min(worst, key=worst.get)} if worst else set())


MARGIN_KERNEL = re.compile(r"split_dim_chunks(\d+)(?:_parts(\d+))?")


def tuned_source(source: str, report: dict, numerics: set[tuple[int, int]] | None = None) -> str:
    """The kernel source with each swept regime's fastest settings in its TUNING."""
    declared = declared_settings(source)
    point = dict(declared.point or {})
    for regime, settings in fastest_per_regime(report, declared.space, numerics).items():
        point.update({f"{regime}_{name}": value for name, value in settings.items()})
    return with_point(source, point)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the session is stale")
    parser.add_argument("--tuning-from", type=Path, help="an attention_gpu.json sweep report")
    parser.add_argument(
        "--margins",
        type=Path,
        help="an attention_margin.json report: --tuning-from keeps only the score chunks and "
        "weight parts that passed every case there",
    )
    arguments = parser.parse_args(argv)
    if arguments.tuning_from is not None:
        numerics = None
        try:
            report = json.loads(arguments.tuning_from.read_text())
            if arguments.margins is not None:
                numerics = safest_numerics(json.loads(arguments.margins.read_text()))
        except (OSError, ValueError, KeyError) as error:
            print(f"attention_session: --tuning-from/--margins: {error}", file=sys.stderr)
            return 2
        if numerics is not None:
            print(f"(score_chunks, weight_parts) allowed by the margins: {sorted(numerics)}")
        KERNEL_FILE.write_text(tuned_source(KERNEL_FILE.read_text(), report, numerics))
        print(f"wrote the fastest settings per regime into {KERNEL_FILE}")
    flags = ["--check"] if arguments.check else []
    return solution_session.main([OPERATOR, str(KERNEL_FILE), *flags])


if __name__ == "__main__":
    sys.exit(main())
