"""The evidence a reviewer reads first: report.md, report.json and a Chrome trace of the run.

Everything is rebuilt from the run folder (manifest, journal, attempt records), so writing it
again after a crash gives the same files.
"""

from pathlib import Path
from typing import Any

from controller.candidate import load_candidate
from controller.runs.manifest import Manifest
from controller.runs.records import attempt_base, load_verdicts, read_json
from controller.runs.store import RunStore, write_atomic, write_json_atomic
from controller.runs.trace import build_trace

LISTED_CHANGES = 50
"""An attempt's changed paths shown in report.md; report.json and diff.patch hold them all."""


def build_report(store: RunStore, manifest: Manifest | None = None) -> dict[str, Any]:
    """What was asked, every attempt with its verdicts, the outcome, costs and durations.

    `manifest` replaces the verified one for a read-only look at an edited run folder."""
    manifest = manifest or store.manifest()
    state = store.state()
    history = store.history()
    attempts = [_attempt_report(store, record) for record in history.attempts]
    return {
        "run_id": store.run_id,
        "flow": manifest.flow,
        "state": state.state,
        "reason": state.reason,
        "limit": state.limit,
        "asked": {
            "target": manifest.target,
            "base_commit": manifest.base_commit,
            "work_item": manifest.work_item,
            "agent": manifest.agent.model_dump(mode="json"),
            "fence": {"name": manifest.fence.name, "unfenced": manifest.fence.unfenced},
            "limits": manifest.limits.model_dump(mode="json"),
            "gates": list(manifest.gates),
        },
        "attempts": attempts,
        "totals": history.spend.model_dump(mode="json") | {"tokens": history.spend.tokens},
        "published": history.published,
        "stops": list(history.stops),
        "manifest_digest": manifest.digest(),
    }


def _attempt_report(store: RunStore, record) -> dict[str, Any]:
    directory = store.attempt_dir(record.number)
    agent = read_json(directory / "agent.json", {})
    check = read_json(directory / "check.json", {})
    changes = []
    if (directory / "candidate").is_dir():
        candidate = load_candidate(
            directory / "candidate", attempt_base(directory, store.base_path)
        )
        changes = [change.model_dump(mode="json") for change in candidate.changes]
    return {
        "number": record.number,
        "status": record.status,
        "exit_reason": record.exit_reason,
        "reason": record.reason,
        "error": agent.get("error"),
        "usage": record.usage,
        "agent_seconds": agent.get("seconds"),
        "check_seconds": check.get("seconds"),
        "changes": changes,
        "verdicts": [
            {
                "gate": v.gate,
                "passed": v.passed,
                **({"skipped": True} if v.details.get("skipped") else {}),
                "summary": v.summary,
                "seconds": v.seconds,
            }
            for v in load_verdicts(directory)
        ],
    }


def render_markdown(report: dict[str, Any]) -> str:
    """The report as a page a reviewer reads top to bottom."""
    asked, totals = report["asked"], report["totals"]
    fence = "UNFENCED" if asked["fence"]["unfenced"] else asked["fence"]["name"]
    lines = [
        f"# Run {report['run_id']}",
        "",
        f"**Outcome: {_outcome(report)}**" + (f" — {report['reason']}" if report["reason"] else ""),
        "",
        "## What was asked",
        "",
        f"- flow: `{report['flow']}`; target `{asked['target']}` at BASE `{asked['base_commit']}`",
        f"- work item: `{_compact(asked['work_item'])}`",
        f"- agent: `{asked['agent']['spec']}`; fence: `{fence}`",
        f"- limits: `{_compact(asked['limits'])}`",
        f"- gates: {', '.join(asked['gates']) or '(none)'}",
        "",
        "## Attempts",
        "",
    ]
    if not report["attempts"]:
        lines.append("No attempt was started.")
    for attempt in report["attempts"]:
        lines += _attempt_lines(attempt)
    lines += [
        "## Costs",
        "",
        f"- attempts: {totals['attempts']} (interrupted ones included)",
        f"- tokens: {token_line(totals)}; dollars: ${totals['dollars']:.4f}",
        f"- model calls: {totals['calls']} ({totals['failed_calls']} failed)",
        f"- active time: {totals['elapsed_s']:.1f} s",
        "",
    ]
    if report.get("stops"):
        lines += ["## Interruptions", "", *[f"- {stop}" for stop in report["stops"]], ""]
    if report["published"]:
        lines += ["## Published", "", f"`{_compact(report['published'])}`", ""]
    lines += [
        "Files: [report.html](report.html) (the review page: diffs, verdicts, charts, "
        "transcript), report.json (this, as data), trace.json (open in Perfetto).",
        "",
    ]
    return "\n".join(lines)


def token_line(totals: dict) -> str:
    """Tokens in and out, with the input read from and written to the prompt cache apart."""
    line = f"{totals['tokens']} ({totals['input_tokens']} in, {totals['output_tokens']} out)"
    read, written = totals.get("cache_read_tokens", 0), totals.get("cache_write_tokens", 0)
    if read or written:
        line += f"; of the input, {read} read from the prompt cache, {written} written to it"
    return line


def _attempt_lines(attempt: dict[str, Any]) -> list[str]:
    seconds = [f"agent {attempt['agent_seconds']:.1f} s"] if attempt["agent_seconds"] else []
    if attempt["check_seconds"] is not None:
        seconds.append(f"gates {attempt['check_seconds']:.1f} s")
    if attempt["status"] == "interrupted":
        usage = "its usage is counted" if attempt["usage"] else "its usage was not recorded"
        return [
            f"### Attempt {attempt['number']}: interrupted",
            "",
            f"- stopped before its end: {attempt.get('reason') or 'reason not recorded'}; "
            f"it counts against the budget, {usage}, and it was not replayed",
            "",
        ]
    lines = [
        f"### Attempt {attempt['number']}: {attempt['status']}",
        "",
        f"- agent stopped: {attempt['exit_reason'] or 'n/a'}"
        + (f" ({attempt['error']})" if attempt["error"] else "")
        + (f"; {', '.join(seconds)}" if seconds else ""),
        f"- changed: {len(attempt['changes'])} path(s)"
        + "".join(
            f"\n  - `{change['path']}` ({change['kind']})"
            for change in attempt["changes"][:LISTED_CHANGES]
        )
        + (
            f"\n  - ... and {len(attempt['changes']) - LISTED_CHANGES} more"
            if len(attempt["changes"]) > LISTED_CHANGES
            else ""
        ),
    ]
    for verdict in attempt["verdicts"]:
        mark = "pass" if verdict["passed"] else "FAIL"
        if verdict.get("skipped"):
            mark = "skipped"
        lines.append(f"- {mark} **{verdict['gate']}**: {verdict['summary']}")
    return [*lines, ""]


def _outcome(report: dict[str, Any]) -> str:
    """The state in a reviewer's words: `done` is an accepted, published result."""
    if report["state"] != "done":
        return report["state"]
    if (report["published"] or {}).get("branch"):
        return "accepted; branch published"
    return "accepted; published"


def _compact(value: Any) -> str:
    import json

    return json.dumps(value, sort_keys=True, default=str)


def write_evidence(store: RunStore) -> Path:
    """Write evidence/report.md, report.json and trace.json; returns the evidence folder."""
    report = build_report(store)
    evidence = store.evidence_dir
    write_json_atomic(evidence / "report.json", report)
    write_atomic(evidence / "report.md", render_markdown(report))
    write_json_atomic(evidence / "trace.json", build_trace(store))
    return evidence
