"""A run folder of a flow the page has no special view of (an optimize batch): what was
asked, its report.md rendered, the plan's shares of the model's step (from report.json), the
model's time from its verify files, and links to the pages of the runs it holds."""

import json
import os
from pathlib import Path

from controller.kernel_ownership import batch_profile, kernel_workloads
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
    outcome = read_json(store.evidence_dir / "report.json", {}) or {}
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
            *_work_item_rows(manifest.work_item),
            ("agent", manifest.agent.spec),
            ("manifest digest", manifest.digest()),
        ],
        manifest_json=json.dumps(manifest.model_dump(mode="json"), indent=2, sort_keys=True),
        attempts=[],
        costs=[],
        report_markdown=report.read_text() if report.is_file() else "",
        model_time=model_time_from_verify(store.run_dir),
        plan_shares=_plan_shares(outcome),
        kernel_workloads=_kernel_workloads(store.run_dir, outcome),
        linked_pages=[
            (path.parent.parent.name, os.path.relpath(path, store.evidence_dir)) for path in below
        ],
    )


def _plan_shares(outcome: dict) -> list[tuple[str, float]]:
    """The plan's operators with their share of the step, largest first; none where the
    report holds no plan."""
    plan = outcome.get("plan") or {}
    rows = [
        (str(row.get("operator")), float(row.get("share_of_step") or 0.0))
        for row in plan.get("rows") or []
        if isinstance(row, dict)
    ]
    return sorted(rows, key=lambda row: -row[1])


def _work_item_rows(work_item: dict) -> list[tuple[str, str]]:
    """One row per setting that was set (nested settings flattened to `outer.inner`)."""
    rows = []
    for key, value in sorted(work_item.items()):
        if isinstance(value, dict):
            rows += [(f"{key}.{k}", v) for k, v in _work_item_rows(value)]
        elif value not in (None, [], {}, ""):
            shown = " ".join(map(str, value)) if isinstance(value, list) else str(value)
            rows.append((key, shown))
    return rows


def _kernel_workloads(folder: Path, outcome: dict) -> list[tuple[str, str, str]]:
    """Each kernel of the batch's profile (the published one, else the one it installed):
    the workloads it owns and those it declines (production runs there), each with its
    figure."""
    return kernel_workloads(batch_profile(folder, outcome.get("profile_folder")))
