"""Registers and spills of the split-dim `split_kv_attention` kernel per launch setting, offline.

No GPU needed: each setting is compiled for sm_90a (the H200) by the installed Triton, and the
PTX is assembled by the `ptxas` Triton ships (`ptxas-blackwell` where the plain one is older
than the PTX), whose `-v` report gives registers per thread and bytes spilled. Spilling is what
made the first H200 figures of this kernel slow, and it is cheap to check before spending
device time. The figures come from the Triton installed here, which may differ from the
GPU machine's. Run from the repository root: `python benchmarks/attention_registers.py` (about
2 s per setting) checks the kernel's TUNING, one setting per regime; `--settings
1x16x64x4x2x4x3x2x5,...` picks heads x queries x keys x dim_parts x score_chunks x warps x
stages x weight_parts x key_splits,
`--json` prints each setting followed by its registers and spill bytes.

Its answer: docs/benchmarks.md, "Attention".
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

os.environ["TRITON_INTERPRET"] = "0"  # compile the kernels, even on a machine without a GPU
BENCHMARKS = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCHMARKS.parent))
sys.path.insert(0, str(BENCHMARKS))
sys.path.insert(0, str(BENCHMARKS.parent / "kernels"))  # the kernels that ship

import split_kv_attention_split_dim as split_dim  # noqa: E402
import triton  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402

NAMES = (
    "heads", "queries", "keys", "dim_parts", "score_chunks", "num_warps", "num_stages",
    "weight_parts", "key_splits",
)  # fmt: skip
BF16_POINTERS = ("q_ptr", "k_cache_ptr", "v_cache_ptr", "k_ptr", "v_ptr", "out_ptr")
INTEGERS = (
    "query_heads", "kv_heads", "tokens", "prefix", "head_dim", "q_batch_stride", "q_head_stride",
    "q_token_stride", "cache_batch_stride", "cache_head_stride", "cache_token_stride",
    "kv_batch_stride", "kv_head_stride", "kv_token_stride", "split_keys", "rows_total",
)  # fmt: skip
FP32_POINTERS = ("partial_ptr", "totals_ptr")
HEAD_DIM = 256


def ptxas() -> str:
    """The newest ptxas Triton ships (the plain one may predate the PTX version it emits)."""
    folder = Path(triton.__file__).parent / "backends" / "nvidia" / "bin"
    newer = folder / "ptxas-blackwell"
    return str(newer if newer.is_file() else folder / "ptxas")


def tuned_settings() -> list[tuple[int, ...]]:
    """The kernel's TUNING, one setting per regime, in NAMES order."""
    tuning = split_dim.TUNING
    return [tuple(tuning[f"{regime}_{name}"] for name in NAMES) for regime in split_dim.REGIMES]


def registers(
    heads: int,
    queries: int,
    keys: int,
    dim_parts: int,
    score_chunks: int,
    warps: int,
    stages: int,
    weight_parts: int,
    key_splits: int,
) -> tuple[int, int]:
    """(registers per thread, bytes of spill stores) of the kernel at one setting."""
    signature = {name: "*bf16" for name in BF16_POINTERS}
    signature |= {name: "*fp32" for name in FP32_POINTERS}
    signature |= {name: "i32" for name in INTEGERS}
    signature["score_scale"] = "fp32"
    constants = {
        "HEADS": heads,
        "DIM_PARTS": dim_parts,
        "SCORE_CHUNKS": score_chunks,
        "WEIGHT_PARTS": weight_parts,
        "BLOCK_QUERIES": queries,
        "BLOCK_KEYS": keys,
        "BLOCK_DIM": HEAD_DIM,
        "KEY_SPLITS": key_splits,
        "UPCAST": False,
    }
    signature |= {name: "constexpr" for name in constants}
    source = ASTSource(
        fn=split_dim._split_dim_attention_kernel, signature=signature, constexprs=constants
    )
    compiled = triton.compile(
        source,
        target=GPUTarget("cuda", 90, 32),
        options={"num_warps": warps, "num_stages": stages},
    )
    with tempfile.TemporaryDirectory() as folder:
        ptx = Path(folder) / "kernel.ptx"
        ptx.write_text(compiled.asm["ptx"])
        command = [ptxas(), "-arch=sm_90a", "-v", str(ptx), "-o", str(Path(folder) / "k.cubin")]
        report = subprocess.run(command, capture_output=True, text=True, check=True)
    text = report.stdout + report.stderr
    used = re.search(r"Used (\d+) registers", text)
    spilled = re.search(r"(\d+) bytes spill stores", text)
    return int(used.group(1)) if used else -1, int(spilled.group(1)) if spilled else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--settings", help="x-separated settings in NAMES order, comma-separated")
    parser.add_argument("--json", action="store_true", help="one JSON list instead of a table")
    arguments = parser.parse_args(argv)
    settings = tuned_settings()
    if arguments.settings:
        try:
            settings = [
                tuple(int(n) for n in one.split("x")) for one in arguments.settings.split(",")
            ]
        except ValueError:
            settings = []
        if not settings or any(len(setting) != len(NAMES) for setting in settings):
            print(f"--settings: each setting is {' x '.join(NAMES)}, integers", file=sys.stderr)
            return 2
    if arguments.json:
        print(json.dumps([[*setting, *registers(*setting)] for setting in settings]))
        return 0
    print(f"triton {triton.__version__}, {Path(ptxas()).name}, sm_90a, head dim {HEAD_DIM}")
    print(" ".join(HEADER) + "  registers  spill bytes")
    for setting in settings:
        used, spilled = registers(*setting)
        widths = (len(name) + 1 for name in HEADER)
        columns = "".join(f"{value:>{width}}" for value, width in zip(setting, widths, strict=True))
        print(f"{columns}  {used:9}  {spilled:11}", flush=True)
    return 0


HEADER = ("heads", "queries", "keys", "parts", "chunks", "warps", "stages", "weights", "runs")


if __name__ == "__main__":
    sys.exit(main())
