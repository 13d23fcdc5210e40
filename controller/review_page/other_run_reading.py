"""A run folder of a flow the page has no special view of (an optimize batch): what was
asked, its report.md as written, the model's time from its verify files, and links to the
pages of the runs it holds."""

import json
import os
from pathlib import Path

from controller.review_page.model_timing import model_time_from_verify
from controller.review_page.page_model import RunPage
from controller.runs.records import read_json
from controller.runs.store import RunStore

PAGE = Path("evidence") / "report.html"


def read_other_run(run_dir: Path) -> RunPage:
    store = RunStore.open(run_dir)
    manifest, _ = store.manifest_for_reading()
    state = read_json(store.state_path, {}) or {}
    report = store.evidence_dir / "report.md"
    below = sorted(
        path
        for path in store.run_dir.rglob(PAGE.name)
        if path.parent.name == "evidence" and path.parent.parent != store.run_dir
    )
    return RunPage(
        run_id=store.run_id,
        flow=manifest.flow,
        state=str(state.get("state", "unknown")),
        outcome=str(state.get("state", "unknown")),
        reason=state.get("reason"),
        asked=[
            ("flow", manifest.flow),
            ("target", f"{manifest.target} at BASE {manifest.base_commit}"),
            ("work item", json.dumps(manifest.work_item, sort_keys=True, default=str)),
            ("agent", manifest.agent.spec),
            ("manifest digest", manifest.digest()),
        ],
        manifest_json=json.dumps(manifest.model_dump(mode="json"), indent=2, sort_keys=True),
        attempts=[],
        costs=[],
        report_markdown=report.read_text() if report.is_file() else "",
        model_time=model_time_from_verify(store.run_dir),
        linked_pages=[
            (path.parent.parent.name, os.path.relpath(path, store.evidence_dir)) for path in below
        ],
    )
