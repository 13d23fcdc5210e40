"""Catalog kernels give the same answers whether a program takes one row or many.

Under the interpreter the kernels take many rows (and heads, and batch rows) per program; a GPU
takes one. The tests force the GPU's choice here and compare: row-wise kernels bit for bit,
attention against its contract.
"""

import pytest
import torch

from operators import triton_runtime
from operators.catalog import (
    ada_rms_norm,
    blocking,
    gated_gelu,
    gated_residual,
    rms_norm,
    rotate_qk,
    split_kv_attention,
)
from operators.catalog.checking import first_violation, scaled_down
from operators.declaration import DISTRIBUTIONS, as_outputs

ROW_WISE = (rms_norm, ada_rms_norm, gated_residual, gated_gelu, rotate_qk)


def _compiled_blocking(monkeypatch, module) -> None:
    """Make `module` launch as it does on a GPU, still under the interpreter."""
    if hasattr(module, "rows_per_program"):
        monkeypatch.setattr(
            module, "rows_per_program", lambda rows, block, compiled_rows=1: compiled_rows
        )
    if hasattr(module, "interpreter_block"):
        monkeypatch.setattr(module, "interpreter_block", lambda size, compiled: compiled)
    if module is rotate_qk:
        monkeypatch.setattr(triton_runtime, "interpreting", lambda: False)


def test_interpreted_rows_per_program_are_powers_of_two_within_bounds():
    for rows in (1, 3, 13, 64, 65, 5000):
        for block in (16, 1024, 1 << 20):
            chosen = blocking.rows_per_program(rows, block)
            assert chosen & (chosen - 1) == 0
            assert 1 <= chosen <= max(1, 2 * rows - 1)
            assert chosen * block <= max(block, blocking.INTERPRETER_MAX_ELEMENTS)


def test_compiled_launches_keep_their_rows_per_program(monkeypatch):
    monkeypatch.setattr(triton_runtime, "interpreting", lambda: False)
    assert blocking.rows_per_program(5000, 1024) == 1
    assert blocking.rows_per_program(5000, 256, compiled_rows=8) == 8
    assert blocking.interpreter_block(4096, 1024) == 1024


@pytest.mark.parametrize("module", ROW_WISE, ids=lambda module: module.__name__.split(".")[-1])
def test_row_wise_kernels_are_bit_identical_with_one_row_per_program(monkeypatch, module):
    declaration = scaled_down(module.DECLARATION)
    workload = declaration.workloads[-1]
    inputs = declaration.make_inputs(workload, seed=7)
    many_rows = as_outputs(declaration.preferred(*inputs, **declaration.params))
    _compiled_blocking(monkeypatch, module)
    one_row = as_outputs(declaration.preferred(*inputs, **declaration.params))
    for got, expected in zip(one_row, many_rows, strict=True):
        assert torch.equal(got, expected)


def test_the_comparison_sees_a_kernel_that_drops_rows_past_the_first_program(monkeypatch):
    declaration = scaled_down(rms_norm.DECLARATION)
    inputs = declaration.make_inputs(declaration.workloads[-1], seed=7)
    expected = declaration.preferred(*inputs, **declaration.params)
    monkeypatch.setattr(rms_norm.torch, "empty", torch.zeros)  # unwritten rows read as zero
    monkeypatch.setattr(rms_norm.triton, "cdiv", lambda count, rows: 1)
    monkeypatch.setattr(rms_norm, "rows_per_program", lambda rows, block, compiled_rows=1: 4)
    got = declaration.preferred(*inputs, **declaration.params)
    assert not torch.equal(got[4:], expected[4:])


@pytest.mark.parametrize("folded", [True, False], ids=["folded", "one_head_per_program"])
def test_attention_meets_its_contract_however_the_heads_and_batches_are_blocked(
    monkeypatch, folded
):
    declaration = scaled_down(split_kv_attention.DECLARATION)
    if not folded:
        monkeypatch.setattr(
            split_kv_attention,
            "_blocks",
            lambda batch, group, tokens, prefix: (1, 1, 16 if tokens <= 64 else 64, 64),
        )
    for workload in declaration.workloads:
        for distribution in DISTRIBUTIONS:
            violation = first_violation(
                declaration, declaration.preferred, workload, 4, distribution
            )
            assert violation is None, f"{workload.name}, {distribution}: {violation.describe()}"


def test_interpreted_attention_folds_batches_and_heads_into_few_programs():
    batches, heads, block_queries, block_keys = split_kv_attention._blocks(8, 4, 8, 16)
    assert (batches, heads) == (8, 4)
    assert block_queries >= 8 and block_keys >= 16
    batches, heads, _, _ = split_kv_attention._blocks(8, 8, 50, 576)
    assert batches * batches * heads * 64 * 64 <= split_kv_attention.INTERPRETER_MAX_SCORES
