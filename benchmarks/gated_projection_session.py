"""Write the scripted tune session that submits benchmarks/gated_gelu_projection_fused.py.

The session writes the kernel module over the solution's copy of the operator file, with its
repository imports made relative as the vendored solution's are, so
`controller tune run --operator gated_gelu_projection --agent scripted:SESSION` judges it by
every tuning gate. Attempt 1 is the module as it is; each later attempt is the same kernel
with other tiles past 64 tokens (ALTERNATIVE_TILES), so a run of as many attempts as the
session holds is a tile sweep judged by the latency gate, each against the incumbent. Run it
after editing the kernel: `python benchmarks/gated_projection_session.py` (`--check` exits 1
when the session file is stale).
"""

import argparse
import json
import sys
from pathlib import Path

import solution_session

BENCHMARKS = Path(__file__).resolve().parent
KERNEL_FILE = BENCHMARKS / "gated_gelu_projection_fused.py"
SESSION_FILE = BENCHMARKS / "sessions" / "tune_gated_gelu_projection.json"
SOLUTION_PATH = "solution/operators/catalog/gated_gelu_projection.py"


ALTERNATIVE_TILES: tuple[dict[str, tuple[int, ...]], ...] = ()
"""Tiles (block_m, block_n, block_k, num_warps, num_stages) attempts 2, 3, ... use instead."""
TILE_KEYS = ("block_m", "block_n", "block_k", "num_warps", "num_stages")


def with_tiles(kernel_source: str, tiles: dict[str, tuple[int, ...]]) -> str:
    """The kernel module with some TUNING entries replaced, one line each as ruff writes them."""
    start = kernel_source.index("TUNING = {\n")
    end = kernel_source.index("\n}\n", start) + 3
    lines = kernel_source[start:end].splitlines(keepends=True)
    for number, line in enumerate(lines):
        name = line.strip().split(":", 1)[0].strip('"')
        if name in tiles:
            settings = ", ".join(f'"{k}": {v}' for k, v in zip(TILE_KEYS, tiles[name], strict=True))
            lines[number] = f'    "{name}": {{{settings}}},\n'
    return kernel_source[:start] + "".join(lines) + kernel_source[end:]


def solution_source(kernel_source: str) -> str:
    """The kernel module as the solution's operator file (`solution_session`'s rewrite)."""
    return solution_session.solution_source(kernel_source, "gated_gelu_projection")


def session_text() -> str:
    """The session file's content: one attempt per tile table, each writing the whole file."""
    kernel = KERNEL_FILE.read_text()
    sources = [kernel] + [with_tiles(kernel, tiles) for tiles in ALTERNATIVE_TILES]
    attempts = [
        [{"tool": "write", "path": SOLUTION_PATH, "content": solution_source(source)}]
        for source in sources
    ]
    return json.dumps({"attempts": attempts}, indent=2) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the session is stale")
    args = parser.parse_args()
    text = session_text()
    if args.check:
        current = SESSION_FILE.read_text() if SESSION_FILE.is_file() else ""
        if current != text:
            print(f"{SESSION_FILE} is stale: run python benchmarks/gated_projection_session.py")
            return 1
        return 0
    SESSION_FILE.write_text(text)
    print(f"wrote {SESSION_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
