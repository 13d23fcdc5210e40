"""The fused gated-GELU projection kernel that `kernels/sessions/tune_gated_gelu_projection.json`
submits: the session carries the kernel module as it is, the kernel meets the operator's
contract under the interpreter at scaled-down sizes with the GPU's small tiles (several row and
column blocks, a partial row group, a hidden size no tile divides, strided inputs), a wrong
epilogue is caught, and the H200 benchmark script runs end to end on the CPU."""

import json
import sys
from pathlib import Path

import pytest
import torch

from operators.catalog import gated_gelu_projection
from operators.catalog.checking import first_violation, scaled_down
from operators.declaration import DISTRIBUTIONS, Workload

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))
sys.path.insert(0, str(BENCHMARKS.parent / "kernels"))

import gated_gelu_projection_fused as fused  # noqa: E402
import gated_projection_gpu  # noqa: E402
import solution_session  # noqa: E402

DECLARATION = scaled_down(gated_gelu_projection.DECLARATION)
SMALL_TILES = {"block_m": 16, "block_n": 32, "block_k": 32, "num_warps": 4, "num_stages": 1}
"""Hidden 96 is three K blocks; 160 columns are five column blocks; 150 tokens are ten row
blocks, one full group of eight and a partial one."""


def small_tiles(x, gate_weight, up_weight):
    return fused.launch_fused(x, gate_weight, up_weight, SMALL_TILES)


def joined_small_tiles(x, gate_weight, up_weight):
    return fused.launch_fused(x, gate_weight, up_weight, {**SMALL_TILES, "joined": 1})


def test_the_session_is_current_and_made_relative():
    assert solution_session.main(["gated_gelu_projection", fused.__file__, "--check"]) == 0
    attempts = json.loads(solution_session.session_file("gated_gelu_projection").read_text())
    (read, write) = attempts["attempts"][0]
    assert write["path"] == "solution/operators/catalog/gated_gelu_projection.py"
    assert "from ...operators.catalog.rounding import round_to_bfloat16" in write["content"]
    assert "def gated_gelu_projection_kernel(" in write["content"]  # the solution's entry


def test_the_regimes_follow_the_token_count():
    assert [fused.regime(t) for t in (50, 64, 400, 576, 4608)] == [
        "gemv", "gemv", "rows512", "rows1024", "gemm",
    ]  # fmt: skip


@pytest.mark.parametrize("kernel", [small_tiles, joined_small_tiles], ids=["paired", "joined"])
@pytest.mark.parametrize("tokens", [1, 150])
def test_the_kernel_meets_the_contract_with_small_tiles(tokens, kernel):
    workload = Workload(name=f"tokens{tokens}", axes={"tokens": tokens})
    for distribution in DISTRIBUTIONS:
        violation = first_violation(DECLARATION, kernel, workload, 3, distribution)
        assert violation is None, f"{distribution}: {violation.describe()}"


@pytest.mark.parametrize("joined", [0, 1])
def test_the_kernel_meets_the_contract_on_strided_inputs(joined):
    x, gate_weight, up_weight = DECLARATION.make_inputs(DECLARATION.workloads[0], seed=4)
    strided_x = torch.cat((x, x), dim=1)[:, ::2]  # column stride 2
    column_major = gate_weight.t().contiguous().t()  # the gate's strides differ from up's
    got = fused.launch_fused(strided_x, column_major, up_weight, {**SMALL_TILES, "joined": joined})
    expected = DECLARATION.reference(strided_x, column_major, up_weight)
    assert DECLARATION.contract.check("out", got, expected) is None
    entry = fused.gated_gelu_projection_kernel(strided_x, column_major, up_weight)
    assert DECLARATION.contract.check("out", entry, expected) is None


@pytest.mark.parametrize("tiles", [small_tiles, joined_small_tiles], ids=["paired", "joined"])
def test_a_kernel_that_activates_the_up_projection_is_caught(tiles):
    def swapped(x, gate_weight, up_weight):
        return tiles(x, up_weight, gate_weight)

    workload = Workload(name="tokens9", axes={"tokens": 9})
    assert first_violation(DECLARATION, swapped, workload, 0) is not None


def test_the_benchmark_runs_on_the_cpu_and_writes_its_report(tmp_path, capsys):
    assert gated_projection_gpu.main(["--device", "cpu", "--quick", "--out", str(tmp_path)]) == 0
    assert "| workload | tokens | production us |" in capsys.readouterr().out
    report = json.loads((tmp_path / "gated_projection_gpu.json").read_text())
    assert report["session_current"] is True
    assert [result["contract"] for result in report["results"]] == ["ok"]
    assert {t["role"] for t in report["results"][0]["timings"]} == {"production", "fused"}


def test_the_benchmark_refuses_full_sizes_under_the_interpreter(capsys):
    assert gated_projection_gpu.main(["--device", "cpu"]) == 2
    assert "--quick" in capsys.readouterr().err
