"""`controller report FOLDER --html` on folders that are not a register or tune run: a batch
folder gets its page (operators, and the model's time from verify's paired timings), anything
else is refused in one line with exit code 2."""

import json
import re

from controller.batch import record as records
from controller.cli import main


def test_a_folder_that_is_neither_run_nor_batch_is_refused_in_one_line(tmp_path, capsys):
    assert main(["report", str(tmp_path), "--html"]) == 2
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1 and "manifest.json" in error


def test_a_batch_page_lists_its_operators_and_draws_the_model_time(tmp_path, capsys):
    options = records.RunOptions(agent="autotune", device="cpu", target=str(tmp_path))
    record = records.new_record(["rms_norm", "gelu_tanh"], options, preflight=False)
    folder = tmp_path / record.batch_id
    folder.mkdir()
    records.save(folder, record)
    timing = {
        "batch": 1,
        "median_ms": {"profile": 9.5, "none": 10.0, "stock": 12.0},
        "round_ms": {"profile": [9.4, 9.5, 9.7], "none": [9.9, 10.0], "stock": [12.0]},
    }
    (folder / "verify.json").write_text(json.dumps({"passed": True, "timing": [timing]}))
    assert main(["report", str(folder), "--html"]) == 0
    page = folder / "report.html"
    assert capsys.readouterr().out.strip() == str(page)
    text = page.read_text()
    assert "data-operator='rms_norm'" in text and "data-operator='gelu_tanh'" in text
    assert "data-chart='model-time' data-points='3'" in text
    assert text.count('id="model-time-data-') == 3  # none, profile and stock each drew a bar
    assert re.findall(r"(?:src|href)=['\"]?(?:https?:)?//", text) == []  # nothing fetched
