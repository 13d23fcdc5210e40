"""The split-dim attention kernel that `kernels/sessions/tune_split_kv_attention.json`
submits: the session carries the kernel module as it is, the kernel meets the operator's
contract under the interpreter at scaled-down sizes (with the head dimension split for the
output and chunked for the scores, and query heads grouped), the gates read its launch
settings per regime, `--tuning-from` writes a sweep's fastest in-space settings into it, and
the H200 benchmark scripts run end to end on the CPU."""

import json
import sys
from pathlib import Path

import pytest
import torch

from gates.tuning.launch_settings import declared_settings
from operators.catalog import split_kv_attention
from operators.catalog.checking import first_violation, scaled_down
from operators.declaration import DISTRIBUTIONS

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))
sys.path.insert(0, str(BENCHMARKS.parent / "kernels"))

import attention_gpu  # noqa: E402
import attention_margin  # noqa: E402
import attention_session  # noqa: E402
import split_kv_attention_split_dim as split_dim  # noqa: E402

SPLIT = {
    **split_dim.INTERPRETED,
    "queries": 16,
    "keys": 32,
    "heads": 2,
    "dim_parts": 4,
    "score_chunks": 4,
    "weight_parts": 3,
    "key_splits": 3,
}
"""Every knob away from its interpreted default: four output parts, four score chunks, three
weight parts, two query heads per program, several key and query blocks per call, the keys in
three runs joined by a second launch."""


def test_the_session_writes_the_kernel_module_over_the_operator_file():
    read, programs, write = json.loads(attention_session.SESSION_FILE.read_text())["attempts"][0]
    assert read == {"tool": "read", "path": attention_session.SOLUTION_PATH}
    sibling = "split_kv_attention_split_dim_programs"
    assert programs["path"] == f"solution/operators/catalog/{sibling}.py"
    assert programs["content"] == attention_session.solution_source(
        (attention_session.KERNEL_FILE.parent / f"{sibling}.py").read_text()
    ), "stale session: run python kernels/attention_session.py"
    assert f"from .{sibling} import" in write["content"]
    assert write["tool"] == "write"
    assert write["path"] == "solution/operators/catalog/split_kv_attention.py"
    assert write["content"] == attention_session.solution_source(
        attention_session.KERNEL_FILE.read_text()
    ), "stale session: run python kernels/attention_session.py"
    assert "from ...operators.catalog.rounding import round_to_bfloat16" in programs["content"]
    settings = declared_settings(write["content"])  # what autotune and the evidence read
    assert settings.point == split_dim.TUNING
    assert settings.space == {k: tuple(v) for k, v in split_dim.TUNING_SPACE.items()}


def test_every_regime_declares_every_setting_inside_its_space():
    for name in split_dim.SETTINGS:
        for regime in split_dim.REGIMES:
            key = f"{regime}_{name}"
            assert split_dim.TUNING[key] in split_dim.TUNING_SPACE[key], key


def test_a_call_takes_the_settings_of_its_regime():
    assert split_dim.regime(1, 50) == "short" and split_dim.regime(8, 50) == "short_wide"
    assert split_dim.regime(1, 576) == "long" and split_dim.regime(4, 576) == "long_wide"
    settings = split_dim.regime_settings(split_dim.TUNING, 8, 576)
    assert settings["queries"] == split_dim.TUNING["long_wide_queries"]


SINGLE_ROUNDING = {**split_dim.INTERPRETED, "score_chunks": 1, "weight_parts": 1}
"""Stock's numerics: the scores in one product over the head dimension, the softmax weights
rounded once to BF16 for the value product."""


ONE_PART_OF_CHUNKED_SCORES = {**split_dim.INTERPRETED, "score_chunks": 2, "weight_parts": 1}
"""The shipped TUNING's numerics: scores in two chunks, the weights rounded once."""


@pytest.mark.parametrize(
    "settings",
    [None, SPLIT, SINGLE_ROUNDING, ONE_PART_OF_CHUNKED_SCORES],
    ids=["interpreted", "split", "single_rounding", "one_part_chunked_scores"],
)
def test_the_kernel_meets_the_contract_on_every_distribution(settings):
    declaration = scaled_down(split_kv_attention.DECLARATION)
    kernel = split_dim.split_kv_attention_triton
    if settings is not None:

        def kernel(q, k_cache, v_cache, k, v, scale):
            return split_dim.attend(q, k_cache, v_cache, k, v, scale, settings)

    for workload in declaration.workloads:
        for distribution in DISTRIBUTIONS:
            violation = first_violation(declaration, kernel, workload, 3, distribution)
            assert violation is None, f"{workload.name}, {distribution}: {violation}"


def _sweep_report(timings: dict[str, list[tuple[float, dict]]]) -> dict:
    results = []
    for regime, rows in timings.items():
        roles = [
            {"role": f"variant{n}", "us": us, "settings": settings}
            for n, (us, settings) in enumerate(rows)
        ]
        results.append({"regime": regime, "timings": [{"role": "sdpa", "us": 1.0}, *roles]})
    return {"results": results}


def test_a_variant_slower_than_the_kernel_as_swept_is_not_written():
    swept = split_dim.regime_settings(split_dim.TUNING, 8, 50)
    slower = {**swept, "score_chunks": 3 - swept["score_chunks"]}
    report = {
        "results": [
            {
                "regime": "short_wide",
                "timings": [
                    {"role": "new", "us": 17.22, "settings": swept},
                    {"role": "variant0", "us": 17.47, "settings": slower},
                ],
            }
        ]
    }
    tuned = attention_session.tuned_source(attention_session.KERNEL_FILE.read_text(), report)
    assert declared_settings(tuned).point == split_dim.TUNING


def test_tuning_from_a_sweep_takes_the_fastest_setting_the_space_allows():
    inside = {**split_dim.regime_settings(split_dim.TUNING, 1, 50), "queries": 32}
    outside = {**inside, "queries": 256}  # faster, but no query block of 256 is declared
    report = _sweep_report({"short": [(9.0, inside), (5.0, outside), (None, inside)]})
    tuned = attention_session.tuned_source(attention_session.KERNEL_FILE.read_text(), report)
    point = declared_settings(tuned).point
    assert point["short_queries"] == 32
    for key in split_dim.TUNING:  # regimes the sweep did not time keep their settings
        if not key.startswith("short_"):
            assert point[key] == split_dim.TUNING[key], key


def test_tuning_from_an_unreadable_report_is_one_line_and_exit_2(tmp_path, capsys):
    broken = tmp_path / "attention_gpu.json"
    broken.write_text("{not json")
    source = attention_session.KERNEL_FILE.read_text()
    assert attention_session.main(["--tuning-from", str(broken)]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
    assert attention_session.KERNEL_FILE.read_text() == source


@pytest.mark.slow  # about 7 s on an idle core: three interpreted workloads, checked and timed
def test_the_benchmark_runs_on_the_cpu_and_writes_its_report(tmp_path, capsys):
    assert attention_gpu.main(["--device", "cpu", "--quick", "--out", str(tmp_path)]) == 0
    assert "| workload | production us | new us |" in capsys.readouterr().out
    report = json.loads((tmp_path / "attention_gpu.json").read_text())
    assert report["session_current"] is True
    assert [result["contract"] for result in report["results"]] == ["ok"] * 3
    roles = {timing["role"] for timing in report["results"][0]["timings"]}
    assert {"production", "new", "sdpa", "variant0"} <= roles


@pytest.mark.slow  # about 30 s: every kernel on one draw of every distribution, interpreted
def test_the_margin_benchmark_runs_on_the_cpu_and_every_kernel_passes_there(tmp_path):
    assert attention_margin.main(["--device", "cpu", "--quick", "--out", str(tmp_path)]) == 0
    rows = json.loads((tmp_path / "attention_margin.json").read_text())["rows"]
    assert {row["kernel"] for row in rows} >= {"production", "split_dim_chunks2"}
    assert all(row["passed"] == row["cases"] and row["worst_ratio"] <= 1 for row in rows)


def test_the_benchmark_refuses_an_unknown_workload_in_one_line(tmp_path, capsys):
    arguments = ["--device", "cpu", "--quick", "--out", str(tmp_path), "--workloads", "nope"]
    assert attention_gpu.main(arguments) == 2
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and "unknown workload 'nope'; known:" in error[0]
    assert not (tmp_path / "attention_gpu.json").exists()


def test_the_benchmarks_refuse_full_sizes_under_the_interpreter(capsys):
    assert attention_gpu.main(["--device", "cpu"]) == 2
    assert attention_margin.main(["--device", "cpu"]) == 2
    assert "--quick" in capsys.readouterr().err


def _margin_rows(worst: dict[str, list[float]]) -> dict:
    rows = []
    for kernel, ratios in worst.items():
        for number, ratio in enumerate(ratios):
            rows.append(
                {"workload": f"w{number}", "kernel": kernel, "worst_ratio": ratio,
                 "passed": 12 if ratio <= 1 else 11, "cases": 12}
            )  # fmt: skip
    return {"rows": rows}


def test_the_margins_allow_only_numerics_that_passed_every_workload():
    margins = _margin_rows({
        "production": [0.5, 0.5],
        "split_dim_chunks2": [0.9, 1.2],
        "split_dim_chunks4": [0.9, 1.1],
        "split_dim_chunks2_parts3": [0.8, 0.95],
        "split_dim_chunks4_parts3": [0.7, 0.9],
    })  # fmt: skip
    assert attention_session.safest_numerics(margins) == {(2, 3), (4, 3)}
    failing = _margin_rows({"split_dim_chunks2": [0.9, 1.3], "split_dim_chunks4": [1.2, 1.1]})
    assert attention_session.safest_numerics(failing) == {(4, 2)}  # none passed: the least bad
    fast = {**split_dim.regime_settings(split_dim.TUNING, 1, 50), "score_chunks": 2}
    safe = {**fast, "weight_parts": 3}
    report = _sweep_report({"short": [(5.0, fast), (9.0, safe)]})
    source = attention_session.KERNEL_FILE.read_text()
    tuned = attention_session.tuned_source(source, report, {(2, 3), (4, 3)})
    assert declared_settings(tuned).point["short_weight_parts"] == 3


def test_one_part_of_the_weights_is_one_rounding_not_two():
    """`weight_parts` 1 rounds the weights once: its output differs from two parts', so the
    space's stock-numerics point is a kernel the autotune search really times."""
    torch.manual_seed(0)
    q = torch.randn(1, 8, 16, 256, dtype=torch.bfloat16)
    k_cache, v_cache = (torch.randn(1, 1, 32, 256, dtype=torch.bfloat16) for _ in range(2))
    k, v = (torch.randn(1, 1, 16, 256, dtype=torch.bfloat16) for _ in range(2))
    outputs = {
        parts: split_dim.attend(
            q, k_cache, v_cache, k, v, 0.0625, {**SINGLE_ROUNDING, "weight_parts": parts}
        )
        for parts in (1, 2)
    }
    assert not torch.equal(outputs[1], outputs[2])
