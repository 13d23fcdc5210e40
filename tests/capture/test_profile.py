"""controller profile on CPU: time attributed to registry, attention and module ranges."""

import json
from pathlib import Path

from controller.cli import main


def test_profile_attributes_ranges_by_operator_and_module(tmp_path, monkeypatch, capsys):
    monkeypatch.syspath_prepend(str(Path(__file__).parent))
    output = tmp_path / "profile"
    argv = ["profile", "--output", str(output), "--warmup", "1", "--steps", "2"]
    assert main([*argv, "--", "capture_drivers:two_layers"]) == 0
    assert "device attribution needs CUDA" in capsys.readouterr().out
    report = json.loads((output / "hotspots.json").read_text())
    assert report["steps"] == 2 and not report["device_attribution"]
    regions = {row["region"]: row for row in report["hotspots"]}
    assert "registry:rms_norm" in regions
    assert regions["module:TwoLayers.layers.*.projection"]["kind"] == "module"
    attention = [row for row in report["hotspots"] if row["kind"] == "attention"]
    assert attention and all("attention" in row["region"] for row in attention)
    assert not any(".0." in region or ".1." in region for region in regions)  # folded
    assert report["outside_registry_us_per_step"] > 0
    assert report["outside_registry_us_per_step"] < report["total_us_per_step"]
    markdown = (output / "hotspots.md").read_text()
    assert "| `registry:rms_norm` | registry |" in markdown
    assert "- `module:TwoLayers.layers.*.projection`" in markdown.split("outside registry")[-1]
    chart = output / "hotspots.png"
    assert chart.is_file() or (output / "hotspots.svg").read_text().startswith("<svg")


def test_profile_refuses_a_bad_step_count(tmp_path, capsys):
    assert main(["profile", "--output", str(tmp_path), "--steps", "0", "--", "x:y"]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
