"""benchmarks/sweep_space.py's shards: merged, they rank every point by the model's time,
their rows weighed by one production timing; a screen-only shard still writes its result."""

import json
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))
sys.path.insert(0, str(BENCHMARKS.parent / "kernels"))

import sweep_space  # noqa: E402

NO_SCREEN = {"seconds": 0.0, "exit_code": None, "stderr_tail": "", "points": []}
PRODUCTION = {"action_b1": {"us": 10.0, "calls": 10}, "prefix_b1": {"us": 50.0, "calls": 1}}


def timed(index, action, prefix):
    workloads = {"action_b1": {"ratio": action}, "prefix_b1": {"ratio": prefix}}
    return {"index": index, "point": {"p": index}, "status": "timed", "workloads": workloads}


def shard(rows, index, production=PRODUCTION):
    result = sweep_space._result("op", 4, rows, NO_SCREEN, 1.0, (index, 2), production)
    return json.loads(json.dumps(result))  # as read back from its file


def test_merged_shards_rank_every_point_by_the_models_time():
    first = shard([timed(0, 1.0, 1.0), timed(2, 0.8, 1.3)], 0)
    failed = {"index": 3, "point": {"p": 3}, "status": "failed", "reason": "no compile"}
    second = shard([timed(1, 0.95, 0.9), failed], 1, {**PRODUCTION})
    merged = sweep_space.merge_shards([second, first])
    # action weighs 100 us, prefix 50: point 1 saves 5 + 5, point 2 saves 20 but loses 15
    assert [row["point"]["p"] for row in merged["ranking"]] == [1, 2, 0]
    assert merged["best"]["model_time_ratio"] == (100 * 0.95 + 50 * 0.9) / 150
    assert [row["index"] for row in merged["failed"]] == [3]
    assert merged["not_reached"] == 0


def test_a_screen_only_shard_writes_a_result_without_ratios():
    rows = [{"index": 0, "point": {"p": 0}, "status": "not_reached"}]
    nothing_timed = {name: {**w, "us": None} for name, w in PRODUCTION.items()}
    result = sweep_space._result("op", 4, rows, NO_SCREEN, 0.0, (0, 2), nothing_timed)
    assert result["best"] is None and result["not_reached"] == 1
    assert "1 points not reached" in sweep_space._line(result)


def test_merge_joins_the_shard_files_with_a_later_screen(tmp_path, monkeypatch, capsys):
    for index, rows in enumerate(([timed(0, 1.0, 1.0)], [timed(1, 0.9, 1.0)])):
        written = shard(rows, index)
        (tmp_path / f"sweep_rms_norm.shard-{index}-of-2.json").write_text(json.dumps(written))
    later = shard([], 0)
    later["screen"]["seconds"] = 12.5
    (tmp_path / "later.json").write_text(json.dumps(later))
    monkeypatch.setenv("OUT", str(tmp_path))
    arguments = ["--operators", "rms_norm", "--merge", "2"]
    assert sweep_space.main([*arguments, "--screen-from", str(tmp_path / "later.json")]) == 0
    merged = json.loads((tmp_path / "sweep_rms_norm.json").read_text())
    assert merged["best"]["index"] == 1 and merged["screen"]["seconds"] == 12.5
    assert sweep_space.main(["--operators", "rms_norm", "--merge", "3"]) == 2
    assert "sweep_rms_norm.shard-0-of-3.json is not in" in capsys.readouterr().err
