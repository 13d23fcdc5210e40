"""The profile report built from synthetic CUDA records (eager and replayed graph), so the
paths only a GPU takes are exercised on every machine."""

import pytest
from profiler_records import graph_timeline, kernel, launch, span

from controller.profiling.hotspot_files import markdown
from controller.profiling.hotspots import build_report
from controller.profiling.profiled_run import ProfiledRun, WallTime
from controller.profiling.timeline import Timeline


def run_of(timeline: Timeline, mode: str, unprofiled_us: float, profiled_us: float):
    wall = WallTime(
        clock="CUDA events",
        unprofiled_median_us=unprofiled_us,
        unprofiled_samples=10,
        profiled_median_us=profiled_us,
    )
    return ProfiledRun(mode=mode, device="cuda", warmup=2, steps=2, timeline=timeline, wall=wall)


def test_a_graph_profile_reports_its_labels_and_an_account_that_matches_the_wall():
    run = run_of(graph_timeline(extra_kernel=False), "graph", unprofiled_us=56, profiled_us=56)
    report = build_report(run, ["driver:forward"])
    assert report.mode == "graph" and report.device_attribution
    registry = {row.region: row for row in report.registry}
    assert registry["registry:gated_gelu"].calls_per_step == 1  # counted in the capture
    assert registry["registry:gated_gelu"].kernel_us_per_step == 10
    assert [row.region for row in report.elsewhere] == ["module:Model.mlp"]
    account = report.account
    assert account.account_us_per_step == 56 and account.busy_us_per_step == 34
    assert {gap.kind: gap.us_per_step for gap in report.gaps} == {
        "before the first kernel": 20,
        "between kernels": 2,
    }
    assert account.agreement == 0 and account.within_goal
    assert report.graph.labelled_share_of_time == 1.0
    text = markdown(report)
    assert "one CUDA graph, replayed" in text
    assert "100.0% of replayed kernel time labelled" in text


def test_a_graph_lead_in_step_is_left_out_of_the_account():
    # Both replays were launched while the device waited (host steps at 100 and 112, a 100 us
    # device-side wait from 100): the first replay's window would count that wait as a gap.
    timeline = graph_timeline(step_starts=(100, 112), replay_starts=(205, 243))
    timeline.activities.append(kernel("spin", 100, 200, 99))
    whole = build_report(run_of(timeline, "graph", 38, 38), ["driver:forward"])
    assert whole.account.account_us_per_step == pytest.approx((241 - 100 + 279 - 241) / 2)
    led = build_report(
        run_of(timeline, "graph", 38, 38).model_copy(update={"lead_in": 1}), ["driver:forward"]
    )
    assert led.account.account_us_per_step == 38  # the second replay, end to end
    assert led.account.busy_us_per_step == 34 and led.account.within_goal
    assert {gap.kind: gap.us_per_step for gap in led.gaps} == {
        "before the first kernel": 2,
        "between kernels": 2,
    }
    registry = {row.region: row for row in led.registry}
    assert registry["registry:gated_gelu"].kernel_us_per_step == 10  # one replay's, not two
    assert "1 lead-in replay left out" in markdown(led)


def test_an_eager_profile_that_misses_the_wall_time_says_so():
    timeline = Timeline(
        ranges=[
            span("profile:step", 0, 100),
            span("module:Model", 1, 99),
            span("registry:rms_norm", 10, 20),
        ],
        launches=[launch("cuLaunchKernel", 15, 1), launch("cudaLaunchKernel", 50, 2)],
        activities=[kernel("norm", 18, 22, 1), kernel("gemm", 52, 60, 2)],
    )
    report = build_report(run_of(timeline, "eager", 80, 100), ["driver:forward"])
    assert [row.region for row in report.registry] == ["registry:rms_norm"]
    assert report.registry_us_per_step == 4 and report.outside_registry_us_per_step == 8
    assert report.account.account_us_per_step == 100
    assert report.account.agreement == pytest.approx(0.25) and not report.account.within_goal
    assert report.account.profiled_agreement == 0
    text = markdown(report)
    assert "agreement +25.0% (outside the 5% goal)" in text
    assert "The profiled steps ran +25.0% against unprofiled ones" in text


def eager_labelled_pass() -> Timeline:
    """Two steps of two kernels each, the host slowed by the profiler to 100 us a step."""
    ranges, launches, activities = [], [], []
    for step, base in enumerate((0, 100)):
        ranges += [
            span("profile:step", base, base + 100),
            span("registry:rms_norm", base + 10, base + 20),
        ]
        launches += [
            launch("cuLaunchKernel", base + 15, 2 * step + 1),
            launch("cudaLaunchKernel", base + 50, 2 * step + 2),
        ]
        activities += [
            kernel("norm", base + 18, base + 22, 2 * step + 1),
            kernel("gemm", base + 52, base + 60, 2 * step + 2),
        ]
    return Timeline(ranges=ranges, launches=launches, activities=activities)


def device_only_pass(second_step_kernel: str = "gemm") -> Timeline:
    """The profiler's own kernel and the lead-in step, then two steps of 30 us each: norm
    after 10 us of host time, gemm 4 us after it."""
    activities = [kernel("profiler_setup", 0, 1, 0), kernel("norm", 2, 6, 0)]
    activities.append(kernel("gemm", 8, 16, 0))
    for base, name in ((16, "gemm"), (46, second_step_kernel)):
        activities += [
            kernel("norm", base + 10, base + 14, 0),
            kernel(name, base + 18, base + 30, 0),
        ]
    return Timeline(activities=activities)


def test_an_eager_profile_takes_its_times_from_the_device_only_pass():
    run = run_of(eager_labelled_pass(), "eager", 30, 30).model_copy(
        update={"timing": device_only_pass()}
    )
    report = build_report(run, ["driver:forward"])
    assert report.lead_in == 1
    account = report.account
    assert account.account_us_per_step == 30 and account.within_goal
    assert account.busy_us_per_step == 16
    assert {gap.kind: gap.us_per_step for gap in report.gaps} == {
        "before the first kernel": 10,
        "between kernels": 4,
    }
    assert [row.region for row in report.registry] == ["registry:rms_norm"]
    assert report.registry_us_per_step == 4 and report.outside_registry_us_per_step == 12
    assert "second pass's that traced only the device" in report.note
    assert "1 lead-in step of the device-only pass left out" in markdown(report)


def test_an_eager_profile_whose_passes_ran_different_kernels_keeps_the_labelled_times():
    run = run_of(eager_labelled_pass(), "eager", 30, 100).model_copy(
        update={"timing": device_only_pass(second_step_kernel="other_gemm")}
    )
    report = build_report(run, ["driver:forward"])
    assert report.lead_in == 0 and report.account.account_us_per_step == 100
    assert "step 1 kernel 1 is 'gemm' in the labelled pass and 'other_gemm'" in report.note
