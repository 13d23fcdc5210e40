"""How a call is launched: the tuned settings (`TUNING`, the space `autotune` searches, the
interpreter's), and the plan of blocks and key slices they give one call's shape."""

import triton

from operators import triton_runtime

TUNING = {
    "rows": 32,
    "keys": 32,
    "programs": 132,
    "num_warps": 4,
    "num_stages": 2,
    "rows_long": 32,
    "keys_long": 32,
    "programs_long": 132,
    "num_warps_long": 4,
    "num_stages_long": 2,
    "merge_rows": 16,
    "merge_dim": 64,
}
"""Launch settings on a GPU. A call is `long` when its query tokens exceed 64 (the prefix
encoder); `programs` is how many programs the key split aims for (the H200 has 132 SMs); the
merge launch takes `merge_rows` x `merge_dim` tiles. Chosen to compile without spilling: a
block's float32 sum, its update and the query rows all live in registers, and an offline
sm_90a compile (`benchmarks/flash_registers.py`) spills 7,488 bytes per thread at 64 rows x 64
keys on 4 warps, 648 on 8 warps, 160 at 64 x 32 on 8 warps, and nothing at 32 rows (32 or 16
keys, 4 or 8 warps). Not yet timed on the H200 at these settings."""
TUNING_SPACE = {
    "rows": (32, 64, 128),
    "keys": (16, 32, 64),
    "programs": (66, 132, 264),
    "num_warps": (4, 8),
    "num_stages": (1, 2, 3),
    "rows_long": (32, 64, 128),
    "keys_long": (16, 32, 64),
    "programs_long": (66, 132, 264),
    "num_warps_long": (4, 8),
    "num_stages_long": (1, 2, 3),
    "merge_rows": (8, 16, 32),
    "merge_dim": (64, 128, 256),
}
"""What `autotune` may try for each launch setting; the numerics never depend on them."""
INTERPRETED = {
    "rows": 64,
    "keys": 64,
    "programs": 16,
    "num_warps": 4,
    "num_stages": 1,
    "merge_rows": 64,
    "merge_dim": 256,
}
"""Under the interpreter every program costs a fixed overhead: few, large ones, still split."""
MERGE_ELEMENTS = 8192
"""Most partial sums one merge program loads at once (all slices of its rows): 64 registers
per thread at 4 warps; `merge_rows` shrinks to fit when there are many slices."""


class Plan:
    """One call's launch: blocks, the key split, and the launch options of both kernels."""

    def __init__(self, settings: dict, batch: int, kv_heads: int, group_rows: int, length: int):
        self.rows = settings["rows"]
        self.keys = settings["keys"]
        self.row_blocks = triton.cdiv(group_rows, self.rows)
        base = self.row_blocks * batch * kv_heads
        key_blocks = triton.cdiv(length, self.keys)
        splits = min(key_blocks, max(1, settings["programs"] // base))
        blocks_per_split = triton.cdiv(key_blocks, splits)
        self.keys_per_split = blocks_per_split * self.keys
        self.splits = triton.cdiv(key_blocks, blocks_per_split)
        self.num_warps = settings["num_warps"]
        self.num_stages = settings["num_stages"]
        self.merge_rows = settings["merge_rows"]
        self.merge_dim = settings["merge_dim"]


def settings_for(tokens: int, tuning: dict | None = None) -> dict:
    """The launch settings of a call with `tokens` query tokens (interpreter: INTERPRETED)."""
    if triton_runtime.interpreting():
        return INTERPRETED
    tuning = TUNING if tuning is None else tuning
    names = ("rows", "keys", "programs", "num_warps", "num_stages")
    chosen = {name: tuning[f"{name}_long" if tokens > 64 else name] for name in names}
    return chosen | {"merge_rows": tuning["merge_rows"], "merge_dim": tuning["merge_dim"]}
