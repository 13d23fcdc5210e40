"""The fused stacked_projection kernel that `kernels/sessions/tune_stacked_projection.json`
submits: the session carries the kernel module as it is, the kernel meets the operator's
contract under the interpreter at small sizes (ragged K, several row blocks, all three weights),
and the GPU benchmark script runs end to end on the CPU."""

import json
import sys
from pathlib import Path

import pytest

from operators.catalog.checking import first_violation
from operators.catalog.stacked_projection import DECLARATION
from operators.declaration import DISTRIBUTIONS, Workload

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))
sys.path.insert(0, str(BENCHMARKS.parent / "kernels"))

import projection_gpu  # noqa: E402
import projection_session  # noqa: E402

import stacked_projection_fused as fused  # noqa: E402

SMALL = projection_gpu.small(DECLARATION)
"""96 features and 80 outputs: K is ragged against the default 128-wide step."""
ROWS = (1, 3, 70)
"""One row, an odd count, and more rows than one program keeps (either path)."""


def test_the_session_writes_the_kernel_module_over_the_operator_file():
    read, write = json.loads(projection_session.SESSION_FILE.read_text())["attempts"][0]
    assert read == {"tool": "read", "path": projection_session.SOLUTION_PATH}
    assert write["tool"] == "write"
    assert write["path"] == "solution/operators/catalog/stacked_projection.py"
    assert write["content"] == projection_session.solution_source(
        Path(fused.__file__).read_text()
    ), "stale session: run python kernels/projection_session.py"
    assert "from ...operators.kernel_launch import compiler_visible, launch" in write["content"]


@pytest.mark.parametrize(
    "settings",
    [
        {},
        {"block_k": 32},
        {"dot": False, "block_n": 8, "block_k": 64},
        {"dot": False, "block_n": 2, "block_k": 1024, "num_stages": 1},
    ],
    ids=["ragged_k", "even_k", "multiply_and_sum", "whole_k_in_one_step"],
)
def test_the_kernel_meets_the_contract_on_every_distribution(settings):
    kernel = projection_gpu.fused_with(settings)
    for rows in ROWS:
        workload = Workload(name=f"rows{rows}", axes={"batch": rows})
        for distribution in DISTRIBUTIONS:
            violation = first_violation(SMALL, kernel, workload, 5, distribution)
            assert violation is None, f"{rows} rows, {distribution}: {violation}"


def test_the_benchmark_runs_on_the_cpu_and_writes_its_report(tmp_path, capsys):
    assert projection_gpu.main(["--device", "cpu", "--quick", "--out", str(tmp_path)]) == 0
    assert "keeps the contract" in capsys.readouterr().out
    report = json.loads((tmp_path / "projection_gpu.json").read_text())
    assert report["session_current"] is True
    for result in report["results"]:
        assert [row["violation"] for row in result["accuracy"]] == [None] * 3
        assert {t["role"] for t in result["timings"]} == {"three_linear", "fused", "variant0"}
    assert set(report["tuning"]) == {"few_rows", "many_rows"}


def test_the_benchmark_refuses_full_sizes_under_the_interpreter(capsys):
    assert projection_gpu.main(["--device", "cpu"]) == 2
    assert "--quick" in capsys.readouterr().err


def test_the_sweep_picks_each_regimes_fastest_settings():
    def result(name: str, batch: int, fused_us: float, variant_us: float | None):
        timings = [
            projection_gpu.Timing(role="three_linear", us=20.0),
            projection_gpu.Timing(role="fused", settings={"splits": 1}, us=fused_us),
            projection_gpu.Timing(role="variant0", settings={"splits": 4}, us=variant_us),
            projection_gpu.Timing(role="variant1", settings={"splits": 2}, us=9.0),
        ]
        return projection_gpu.WorkloadResult(
            workload=name, batch=batch, weight_bytes=1, floor_us=1.0, contract="c", accuracy=[],
            timings=timings,
        )  # fmt: skip

    def report(*results):
        return projection_gpu.Report(
            device="d", torch="t", triton="t", session_current=True, tuning={}, seconds=1.0,
            results=list(results),
        )  # fmt: skip

    shipped = {"few_rows": {"splits": 1}, "many_rows": {"splits": 1}}
    # batch 1 and batch 8 are different regimes: each takes its own fastest
    assert projection_gpu.fastest_settings(
        report(result("b1", 1, 5.0, 3.0), result("b8", 8, 5.0, 6.0)), shipped
    ) == {"few_rows": {"splits": 4}, "many_rows": {"splits": 1}}
    # within a regime, the least time summed over its workloads
    assert projection_gpu.fastest_settings(
        report(result("b1", 1, 5.0, 3.0), result("b2", 2, 5.0, 8.0)), shipped
    ) == {"few_rows": {"splits": 1}, "many_rows": {"splits": 1}}
    # a variant not timed at every workload of its regime is not chosen, however fast
    assert projection_gpu.fastest_settings(
        report(result("b1", 1, 5.0, 1.0), result("b2", 2, 5.0, None)), shipped
    ) == {"few_rows": {"splits": 1}, "many_rows": {"splits": 1}}
