"""controller profile on CPU: registry calls counted for their operator (never the module
around them), module and attention ranges, and a step account that adds up."""

import json
from collections import Counter
from pathlib import Path

import pytest

from controller.cli import main
from operators import record_registry_hits, use_kernel_profile

TINY = ["controller.profiling.example_driver:forward", "tiny", "1"]


@pytest.fixture(scope="module")
def tiny_profile(tmp_path_factory) -> tuple[Path, Counter]:
    """One profiled forward of the tiny example (after one warm-up, before one timed without
    the profiler), and the registry calls per forward as the registry itself counted them.
    The references run the registry calls (fast on a CPU, unlike interpreted Triton), so each
    call holds ATen ops that a wrong attribution would give to the module around it."""
    output = tmp_path_factory.mktemp("profile")
    argv = ["profile", "--output", str(output), "--warmup", "1", "--steps", "1"]
    with use_kernel_profile("torch"), record_registry_hits() as hits:
        assert main([*argv, "--timed-steps", "1", "--", *TINY]) == 0
    calls: Counter = Counter()
    for (name, *_call_site), count in hits.items():
        calls[f"registry:{name}"] += count // 3  # three forwards: warm-up, profiled, timed
    return output, calls


def test_each_registry_call_is_counted_for_its_operator_not_the_module_around_it(tiny_profile):
    folder, expected = tiny_profile
    report = json.loads((folder / "hotspots.json").read_text())
    assert report["mode"] == "eager" and not report["device_attribution"]
    registry = {row["region"]: row for row in report["registry"]}
    assert expected and set(registry) == set(expected)
    for region, calls in expected.items():
        assert registry[region]["calls_per_step"] == calls
        assert registry[region]["kernels_per_step"] == calls  # every call's work is its own
        assert registry[region]["kernel_us_per_step"] > 0
    assert all(not row["region"].startswith("registry:") for row in report["elsewhere"])
    kinds = {row["region"]: row["kind"] for row in report["elsewhere"]}
    assert kinds["module:ExampleModel.action_expert.layers.*.mlp"] == "module"
    # every piece of the attention modules is a registry call now: nothing left to them
    assert not any(region.endswith(".attention") for region in kinds)
    assert not any(".0." in region for region in kinds)  # layer indices folded


def test_the_step_account_adds_up_and_states_its_agreement_with_the_wall_time(tiny_profile):
    folder, _calls = tiny_profile
    report = json.loads((folder / "hotspots.json").read_text())
    account = report["account"]
    total = account["account_us_per_step"]
    assert account["busy_us_per_step"] + account["gap_us_per_step"] == pytest.approx(total)
    assert sum(gap["us_per_step"] for gap in report["gaps"]) == pytest.approx(
        account["gap_us_per_step"]
    )
    attributed = report["registry_us_per_step"] + report["outside_registry_us_per_step"]
    assert attributed == pytest.approx(account["busy_us_per_step"])  # host work never overlaps
    shares = [row["share_of_step"] for row in report["registry"] + report["elsewhere"]]
    shares += [gap["share_of_step"] for gap in report["gaps"]]
    assert sum(shares) == pytest.approx(1.0)
    wall = account["wall"]
    assert wall["clock"] == "host clock" and wall["unprofiled_samples"] == 1
    assert account["agreement"] == pytest.approx(total / wall["unprofiled_median_us"] - 1)
    # the window is the profiled step itself (a loaded machine may pause between the clock
    # read and the range opening, hence the margin)
    assert abs(account["profiled_agreement"]) < 0.1
    markdown = (folder / "hotspots.md").read_text()
    sections = ["## Registry operators", "## Modules", "Outside registry calls", "## Gaps"]
    assert [markdown.index(section) for section in sections] == sorted(
        markdown.index(section) for section in sections
    )
    assert f"agreement {account['agreement']:+.1%}" in markdown
    assert "| `registry:rms_norm` |" in markdown
    chart = folder / "hotspots.png"
    assert chart.is_file() or (folder / "hotspots.svg").read_text().startswith("<svg")


def test_profile_ranks_module_and_attention_ranges_of_a_small_driver(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(Path(__file__).parent))
    argv = ["profile", "--output", str(tmp_path), "--steps", "2", "--timed-steps", "1"]
    assert main([*argv, "--", "capture_drivers:two_layers"]) == 0
    report = json.loads((tmp_path / "hotspots.json").read_text())
    assert report["registry"][0]["region"] == "registry:rms_norm"
    assert report["registry"][0]["calls_per_step"] == 2
    kinds = {row["region"]: row["kind"] for row in report["elsewhere"]}
    assert kinds["module:TwoLayers.layers.*.projection"] == "module"
    assert any(kind == "attention" for kind in kinds.values())


def test_the_driver_runs_under_the_kernel_profile_asked_for_and_the_report_says_so(
    tmp_path, monkeypatch
):
    monkeypatch.syspath_prepend(str(Path(__file__).parent))
    import capture_drivers

    argv = ["profile", "--output", str(tmp_path), "--steps", "1", "--timed-steps", "1"]
    assert main([*argv, "--kernel-profile", "torch", "--", "capture_drivers:profile_seen"]) == 0
    assert set(capture_drivers.PROFILES_SEEN) == {"torch"}  # warm-up, profiled and timed steps
    assert json.loads((tmp_path / "hotspots.json").read_text())["kernel_profile"] == "torch"
    assert "kernel profile `torch`" in (tmp_path / "hotspots.md").read_text().splitlines()[0]


def test_an_unknown_kernel_profile_is_a_one_line_error_naming_those_installed(tmp_path, capsys):
    argv = ["profile", "--output", str(tmp_path / "out"), "--kernel-profile", "h999"]
    assert main([*argv, "--", *TINY]) == 2
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and "--kernel-profile 'h999': not a profile here" in error[0]
    assert "none, torch, stock, auto" in error[0] and "h100" in error[0]
    assert not (tmp_path / "out").exists()


def test_profile_refuses_a_bad_step_count(tmp_path, capsys):
    assert main(["profile", "--output", str(tmp_path), "--steps", "0", "--", "x:y"]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_graph_mode_without_cuda_is_a_one_line_error(tmp_path, capsys):
    argv = ["profile", "--graph", "--output", str(tmp_path), "--", *TINY]
    assert main(argv) == 2
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and "--graph needs a CUDA device" in error[0]
