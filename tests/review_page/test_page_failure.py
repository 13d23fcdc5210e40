"""A page that cannot be drawn never fails the run it describes: the error is left where the
page would be, and the run's own evidence stands."""

import json

from controller.review_page import write
from controller.review_page.write import write_review_page


def test_a_drawing_error_is_recorded_not_raised(tmp_path, monkeypatch):
    run = tmp_path / "tune-run"
    (run / "evidence").mkdir(parents=True)
    (run / "manifest.json").write_text(json.dumps({"manifest": {}}))

    def broken(run_dir):
        raise ValueError("'xerr' must not contain negative values")

    monkeypatch.setattr(write, "run_page_html", broken)
    assert write_review_page(run) is None
    error = (run / "evidence" / "report_html_error.txt").read_text()
    assert "xerr" in error and "Traceback" in error
    assert not (run / "evidence" / "report.html").exists()
