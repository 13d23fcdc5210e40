"""How the runs of keys of the split-dim attention kernel meet (its programs,
`split_kv_attention_split_dim_programs.py`, store the runs; `split_kv_attention_split_dim.py`
launches them): a second launch over every row, or the run of each tile that finishes last.
It ships beside those modules, in the solution's operator folder.
"""

import triton
import triton.language as tl

from operators.catalog.rounding import round_to_bfloat16

JOIN_COLUMNS = tl.constexpr(32)
"""Output columns the joining run adds up at a time."""


@triton.jit
def _store_output(out_ptr, acc, row_sum, out_rows, value_dims, stored, head_dim):
    """A tile's output from one run of all its keys, rounded once to BF16."""
    out = round_to_bfloat16(acc / row_sum[:, None])
    tl.store(out_ptr + out_rows[:, None] * head_dim + value_dims[None, :], out, mask=stored)


@triton.jit
def _store_run(partial_ptr, totals_ptr, acc, row_max, row_sum, first_row, present):
    """One run's unnormalised FP32 sums, maximum and total for a tile's rows, at `first_row`
    of the run buffers (a tile's runs one after another, each the tile's rows and its part's
    columns), for the run that joins the tile's runs."""
    rows = first_row + tl.arange(0, acc.shape[0])
    columns = tl.arange(0, acc.shape[1])
    tl.store(
        partial_ptr + rows[:, None] * acc.shape[1] + columns[None, :], acc, mask=present[:, None]
    )
    tl.store(totals_ptr + rows * 2, row_max, mask=present)
    tl.store(totals_ptr + rows * 2 + 1, row_sum, mask=present)


@triton.jit(noinline=True)
def _join_if_last(
    partial_ptr,
    totals_ptr,
    arrival_ptr,
    out_ptr,
    first_out_row,
    head_stride,
    tokens,
    first_query,
    first_dim,
    first_run_row,
    head_dim,
    HEADS: tl.constexpr,
    BLOCK_QUERIES: tl.constexpr,
    PART_DIM: tl.constexpr,
    RUNS: tl.constexpr,
):
    """Count this run in at the tile's arrival counter; the run that arrives last reads every
    run's sums and totals (as `_store_run` stored them from `first_run_row`, added in run order
    as `_join_runs_kernel` adds them) and writes the tile's output
    (HEADS x BLOCK_QUERIES rows from `first_out_row`, a head `head_stride` rows on; PART_DIM
    columns from `first_dim`), JOIN_COLUMNS at a time, then sets the counter back to zero. A
    call, not inlined: its registers are not the attention loop's. The barrier orders every
    thread's stores before the count (release), and the count before the loads (acquire); the
    loads bypass L1, which is not coherent between programs."""
    tl.debug_barrier()
    arrived = tl.atomic_add(arrival_ptr, 1, sem="acq_rel", scope="gpu")
    if arrived == RUNS - 1:
        local = tl.arange(0, HEADS * BLOCK_QUERIES)
        queries = first_query + local % BLOCK_QUERIES
        out_rows = first_out_row + (local // BLOCK_QUERIES) * head_stride + queries
        present = queries < tokens
        top = tl.full(local.shape, float("-inf"), dtype=tl.float32)
        for run in tl.static_range(RUNS):
            rows = first_run_row + run * local.shape[0] + local
            top = tl.maximum(top, _stored_total(totals_ptr, rows, present, 0))
        total = tl.zeros(local.shape, dtype=tl.float32)
        for run in tl.static_range(RUNS):
            rows = first_run_row + run * local.shape[0] + local
            rescale = tl.exp2(_stored_total(totals_ptr, rows, present, 0) - top)
            total += rescale * _stored_total(totals_ptr, rows, present, 1)  # 0 for no keys
        total = tl.where(present, total, 1.0)  # rows past the call's end are not stored
        columns: tl.constexpr = min(PART_DIM, JOIN_COLUMNS)
        for chunk in tl.static_range(PART_DIM // columns):
            part_columns = chunk * columns + tl.arange(0, columns)
            dims = first_dim + part_columns
            inside = present[:, None] & (dims[None, :] < head_dim)
            acc = tl.zeros((HEADS * BLOCK_QUERIES, columns), dtype=tl.float32)
            for run in tl.static_range(RUNS):
                rows = first_run_row + run * local.shape[0] + local
                rescale = tl.exp2(_stored_total(totals_ptr, rows, present, 0) - top)
                sums = tl.load(
                    partial_ptr + rows[:, None] * PART_DIM + part_columns[None, :],
                    mask=inside,
                    other=0.0,
                    cache_modifier=".cg",
                )
                acc += rescale[:, None] * sums
            out = round_to_bfloat16(acc / total[:, None])
            tl.store(out_ptr + out_rows[:, None] * head_dim + dims[None, :], out, mask=inside)
        tl.atomic_xchg(arrival_ptr, 0, sem="relaxed", scope="gpu")


@triton.jit
def _stored_total(totals_ptr, rows, present, WHICH: tl.constexpr):
    """A run's maximum (WHICH 0) or total (WHICH 1) at `rows`, read past L1 (another program
    stored it)."""
    return tl.load(totals_ptr + rows * 2 + WHICH, mask=present, other=0.0, cache_modifier=".cg")


@triton.jit
def _join_runs_kernel(
    partial_ptr,
    totals_ptr,
    out_ptr,
    rows_total,
    head_dim,
    KEY_SPLITS: tl.constexpr,
    BLOCK_ROWS: tl.constexpr,
    BLOCK_DIM: tl.constexpr,
):
    """Each output row from its runs of keys: their sums rescaled to the largest maximum and
    added in run order, over their totals rescaled alike (what the online softmax does from
    one key block to the next), rounded once to BF16."""
    rows = tl.program_id(0) * BLOCK_ROWS + tl.arange(0, BLOCK_ROWS)
    dims = tl.arange(0, BLOCK_DIM)
    present = rows < rows_total
    top = tl.full((BLOCK_ROWS,), float("-inf"), dtype=tl.float32)
    for run in tl.static_range(KEY_SPLITS):
        run_max = tl.load(totals_ptr + (run * rows_total + rows) * 2, mask=present, other=0.0)
        top = tl.maximum(top, run_max)
    total = tl.zeros((BLOCK_ROWS,), dtype=tl.float32)
    acc = tl.zeros((BLOCK_ROWS, BLOCK_DIM), dtype=tl.float32)
    inside = present[:, None] & (dims[None, :] < head_dim)
    for run in tl.static_range(KEY_SPLITS):
        run_rows = run * rows_total + rows
        run_max = tl.load(totals_ptr + run_rows * 2, mask=present, other=0.0)
        rescale = tl.exp2(run_max - top)  # 0 for a run with no keys (its maximum is -inf)
        total += rescale * tl.load(totals_ptr + run_rows * 2 + 1, mask=present, other=0.0)
        sums = tl.load(partial_ptr + run_rows[:, None] * head_dim + dims[None, :], mask=inside)
        acc += rescale[:, None] * sums
    out = round_to_bfloat16(acc / total[:, None])
    tl.store(out_ptr + rows[:, None] * head_dim + dims[None, :], out, mask=inside)
