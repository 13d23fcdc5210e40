"""The tune-all summary's figures are the evaluator's: the headline is the model-time speedup
the tune run's report prints, and each workload shows its warm and cold times and ratios, so
a workload slower on the figure promotion did not use is seen; a figure an export lacks is "-".

Export folders are real: one made by a `tune run` (timing faked only at the evaluator
boundary), others holding an `EvaluationResult` built from the evaluator's own graph rows and
promotion rule."""

import json
import sys
from pathlib import Path

import pytest

from controller.batch import record as records
from controller.batch.export_figures import export_figures
from controller.batch.record import OperatorEntry, RunOptions
from controller.batch.summary import BatchSummary, summarize_operator, write_summary
from controller.cli.tune_command import run_tune
from controller.review_page import write_review_page
from gates.evaluator.graph_timing import graph_row
from gates.evaluator.promotion import promotion_verdict
from gates.evaluator.protocol import EvaluationResult
from gates.evaluator.results import TimingReport, WorkloadTiming, WorkloadWeight
from gates.tuning.reading import read_evaluation
from gates.tuning.verdicts import latency_verdict
from operators.declaration import Workload

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tune"))
import tune_fixtures  # noqa: E402  (tests/tune is not a package)

OPERATOR = "rms_norm"


def finished_batch(batch: Path, target: Path) -> records.BatchRecord:
    """batch.json of a one-operator batch whose run ended done."""
    options = RunOptions(agent="scripted", device="cuda", target=str(target))
    record = records.new_record([OPERATOR], options).model_copy(update={"state": "finished"})
    record = record.with_entry(OPERATOR, status="done")
    records.save(batch, record)
    return record


def write_export(batch: Path, evaluation: dict) -> Path:
    """An export folder where tune-all keeps an operator's run, holding `evaluation`."""
    export = batch / "runs" / OPERATOR / "tune-20261201T000000Z-000000" / "export"
    (export / "evaluations").mkdir(parents=True)
    (export / "evaluations" / "attempt-0002.json").write_text(json.dumps(evaluation))
    speedup = read_evaluation(evaluation).weighted_speedup()
    (export / "export.json").write_text(
        json.dumps({"operator": OPERATOR, "attempt": 2, "weighted_speedup": speedup})
    )
    return export


def graph_evaluation(per_call_us: dict[str, dict], calls_per_forward: dict[str, float]) -> dict:
    """A passing CUDA-graph evaluation: per workload its promotion figure and each role's
    per-call microseconds warm and cold (four replays each), judged by the promotion rule."""
    rows = {}
    for name, figures in per_call_us.items():
        times = {
            role: {regime: [figures[role][regime] / 1e3] * 4 for regime in ("warm", "cold")}
            for role in ("baseline", "candidate")
        }
        workload = Workload(name=name, axes={"tokens": 4})
        rows[name] = graph_row(workload, times, figures["figure"], 2, 4096, 0.5)
    weights = {
        name: WorkloadWeight(calls_per_forward=calls, source="declared")
        for name, calls in calls_per_forward.items()
    }
    verdict = promotion_verdict({"workloads": rows}, ["baseline", "candidate"], weights=weights)
    timing = TimingReport(
        workloads={name: WorkloadTiming(**row) for name, row in rows.items()},
        cuda_graphs=True,
        promotion=verdict,
    )
    result = EvaluationResult(
        task="tasks/rms_norm",
        operator=OPERATOR,
        solution="rms_norm_candidate",
        device="cuda",
        status="PASSED",
        timing=timing,
    )
    return result.model_dump(mode="json")


def test_the_headline_is_the_model_time_speedup_the_tune_run_reports(tmp_path):
    script = tune_fixtures.write_script(
        tmp_path / "session.json", [tune_fixtures.mark("factor=0.80")]
    )
    batch = tmp_path / "batch"
    target = tune_fixtures.make_target(tmp_path / "target")
    arguments = tune_fixtures.tune_arguments(
        batch / "runs" / OPERATOR,
        target,
        operator=OPERATOR,
        agent=f"scripted:{script}",
        unfenced=True,
        device="cuda",
        max_attempts=1,
    )
    assert run_tune(arguments, evaluator=tune_fixtures.FakeEvaluator()) == 0
    run_dir = tune_fixtures.only_run(batch / "runs" / OPERATOR)
    record = finished_batch(batch, target)

    (row,) = write_summary(batch, record).operators
    exported = json.loads((run_dir / "export" / "export.json").read_text())
    assert row.model_time_speedup == exported["weighted_speedup"]
    assert 1.2 < row.model_time_speedup < 1.3
    shown = f"x{row.model_time_speedup:.3f} in model time"
    assert f"{shown} over production" in (run_dir / "evidence" / "report.md").read_text()
    assert row.baseline_us / row.tuned_us == pytest.approx(row.model_time_speedup)
    assert 1.1 < row.weakest_round_speedup <= row.model_time_speedup * 1.02

    markdown = (batch / "summary.md").read_text()
    assert f"| {row.tuned_us:.2f} | {row.model_time_speedup:.3f} |" in markdown
    assert f"## {OPERATOR}: {shown}" in markdown
    for workload in row.workloads:  # the fake times one figure, eagerly: no cold figure
        assert workload.tuned_cold_us is None and workload.warm_ratio is not None
        assert f"| {workload.tuned_warm_us:.2f} | {workload.warm_ratio.ratio:.3f} " in markdown
        assert f"| {workload.workload} | " in markdown and "| - | - | - |" in markdown
    saved = BatchSummary.model_validate_json((batch / "summary.json").read_text())
    assert saved.operators[0].workloads == row.workloads
    write_review_page(batch)  # the batch's page reads the summary back
    assert (batch / "report.html").is_file() and not (batch / "report_html_error.txt").exists()


def test_a_workload_slower_on_the_cold_figure_shows_that_ratio(tmp_path):
    """`a` is promoted on its warm figure (x0.8) though 0.8% slower cold, within the noise
    margin; `b` is judged cold. The model weighs `a` by 4 calls per forward."""
    evaluation = graph_evaluation(
        {
            "a": {
                "figure": "warm",
                "baseline": {"warm": 10.0, "cold": 20.0},
                "candidate": {"warm": 8.0, "cold": 20.16},
            },
            "b": {
                "figure": "cold",
                "baseline": {"warm": 12.0, "cold": 30.0},
                "candidate": {"warm": 10.0, "cold": 24.0},
            },
        },
        calls_per_forward={"a": 4.0, "b": 1.0},
    )
    assert evaluation["timing"]["promotion"]["promoted"]  # what an export holds
    batch = tmp_path / "batch"
    write_export(batch, evaluation)
    record = finished_batch(batch, tmp_path / "target")

    (row,) = write_summary(batch, record).operators
    a, b = row.workloads
    assert (a.workload, a.promotion_figure, b.promotion_figure) == ("a", "warm", "cold")
    assert a.cold_ratio.ratio == pytest.approx(1.008) and a.warm_ratio.ratio == pytest.approx(0.8)
    assert (a.baseline_cold_us, a.tuned_cold_us) == pytest.approx((20.0, 20.16))
    assert b.cold_ratio.ratio == pytest.approx(0.8) and b.warm_ratio.ratio == pytest.approx(10 / 12)
    assert (a.calls_per_forward, a.weight_source) == (4.0, "declared")
    markdown = (batch / "summary.md").read_text()
    assert "| a | 4 | warm | 10.00 | 8.00 | 0.800 | 20.00 | 20.16 | 1.008 |" in markdown
    assert "| b | 1 | cold | 12.00 | 10.00 | 0.833 | 30.00 | 24.00 | 0.800 |" in markdown

    # model time: (4 x 10 + 30) / (4 x 8 + 24), each workload on its promotion figure
    assert row.model_time_speedup == pytest.approx(70 / 56)
    assert row.weakest_round_speedup == pytest.approx(70 / 56)
    assert row.model_time_ratio.ratio == pytest.approx(0.8)
    verdict = latency_verdict(read_evaluation(evaluation))
    assert f"x{row.model_time_speedup:.3f} in model time" in verdict.summary
    assert (row.baseline_us, row.tuned_us) == pytest.approx((70 / 5, 56 / 5))
    assert f"## {OPERATOR}: x1.250 in model time" in markdown


def test_an_export_without_cold_figures_or_a_promotion_record_shows_dashes(tmp_path):
    """An eager evaluation's rows from before promotion was recorded: declared weights, warm
    medians and round medians only."""
    rounds = {
        "a": {"weight": 1.0, "baseline": [10.0, 10.0, 10.0], "candidate": [8.0, 9.0, 8.0]},
        "b": {"weight": 3.0, "baseline": [2.0, 2.0, 2.0], "candidate": [1.0, 2.0, 1.0]},
    }
    workloads = {
        name: {
            "weight": row["weight"],
            "baseline_median_us": 10.0 if name == "a" else 2.0,
            "candidate_median_us": 8.0 if name == "a" else 1.0,
            "baseline_round_medians_us": row["baseline"],
            "candidate_round_medians_us": row["candidate"],
        }
        for name, row in rounds.items()
    }
    batch = tmp_path / "batch"
    export = write_export(batch, {"status": "PASSED", "timing": {"workloads": workloads}})
    figures = export_figures(export)
    assert figures.baseline_us == pytest.approx((10 + 3 * 2) / 4)
    assert figures.tuned_us == pytest.approx((8 + 3 * 1) / 4)
    assert figures.model_time_speedup == pytest.approx(16 / 11)
    assert figures.weakest_round_speedup == pytest.approx(16 / 15)  # round 2: 9 + 3 * 2
    assert figures.model_time_ratio is None

    row = summarize_operator(batch, OPERATOR, OperatorEntry(status="done"))
    assert row.speedup == row.model_time_speedup  # the name the progress line reads
    record = finished_batch(batch, tmp_path / "target")
    write_summary(batch, record)
    markdown = (batch / "summary.md").read_text()
    assert "| a | 1 | warm | 10.00 | 8.00 | - | - | - | - |" in markdown
    assert "| b | 3 | warm | 2.00 | 1.00 | - | - | - | - |" in markdown


def test_an_export_whose_evaluation_was_not_timed_has_no_figures(tmp_path):
    batch = tmp_path / "batch"
    export = write_export(batch, {"status": "PASSED", "device": "cpu", "timing": None})
    assert export_figures(export) is None
    row = summarize_operator(batch, OPERATOR, OperatorEntry(status="done"))
    assert row.export == str(export) and row.model_time_speedup is None and not row.workloads


def test_an_export_compared_on_the_promotion_figure_only_shows_that_ratio(tmp_path):
    """A promotion record from before both figures were compared: per workload one ratio."""
    evaluation = graph_evaluation(
        {
            "a": {
                "figure": "cold",
                "baseline": {"warm": 10.0, "cold": 20.0},
                "candidate": {"warm": 9.0, "cold": 15.0},
            }
        },
        calls_per_forward={"a": 2.0},
    )
    del evaluation["timing"]["promotion"]["against"]["baseline"]["figures"]
    batch = tmp_path / "batch"
    write_export(batch, evaluation)
    write_summary(batch, finished_batch(batch, tmp_path / "target"))
    markdown = (batch / "summary.md").read_text()
    assert "| a | 2 | cold | 10.00 | 9.00 | - | 20.00 | 15.00 | 0.750 |" in markdown
