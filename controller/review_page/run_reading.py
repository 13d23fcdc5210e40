"""A run folder read into a `RunPage`: the evidence report's facts, plus what only the page
shows (diffs, verdict details, per-round timings, transcripts). Reads, never writes."""

import json
from pathlib import Path
from typing import Any

from controller.review_page.evaluation_rounds import round_medians, workload_latencies
from controller.review_page.page_model import (
    AttemptView,
    GateView,
    ModelTime,
    RunPage,
    SpeedupPoint,
    TimeFigure,
)
from controller.review_page.transcript_steps import cut, transcript_steps
from controller.runs.evidence import build_report, token_line
from controller.runs.records import load_verdicts, read_json
from controller.runs.store import RunStore

DIFF_CHARACTERS = 150_000
DETAIL_CHARACTERS = 20_000


def read_run(run_dir: Path) -> RunPage:
    store = RunStore.open(run_dir)
    manifest, _ = store.manifest_for_reading()
    report = build_report(store, manifest)
    asked = report["asked"]
    fence = "UNFENCED" if asked["fence"]["unfenced"] else asked["fence"]["name"]
    totals = report["totals"]
    incumbents = _incumbent_attempts(store) if manifest.flow == "tune" else set()
    evaluations = {
        record.number: read_json(store.attempt_dir(record.number) / "evaluation.json")
        for record in store.history().attempts
    }
    return RunPage(
        run_id=report["run_id"],
        flow=report["flow"],
        state=report["state"],
        outcome=_outcome(report),
        reason=report["reason"],
        asked=[
            ("flow", report["flow"]),
            ("target", f"{asked['target']} at BASE {asked['base_commit']}"),
            ("work item", _compact(asked["work_item"])),
            ("agent", asked["agent"]["spec"]),
            ("fence", fence),
            ("limits", _compact(asked["limits"])),
            ("gates", ", ".join(asked["gates"]) or "(none)"),
            ("manifest digest", report["manifest_digest"]),
        ],
        manifest_json=json.dumps(manifest.model_dump(mode="json"), indent=2, sort_keys=True),
        attempts=[
            _attempt(store, attempt, evaluations.get(attempt["number"]))
            for attempt in report["attempts"]
        ],
        costs=[
            ("attempts", f"{totals['attempts']} (interrupted ones included)"),
            ("tokens", token_line(totals)),
            ("dollars", f"${totals['dollars']:.4f}"),
            ("model calls", f"{totals['calls']} ({totals['failed_calls']} failed)"),
            ("active time", f"{totals['elapsed_s']:.1f} s"),
        ],
        pictures=evidence_pictures(store.evidence_dir),
        published=_compact(report["published"]) if report["published"] else None,
        stops=report["stops"],
        speedups=_speedups(evaluations, incumbents),
        tuning_lines=_tuning_lines(store, report) if manifest.flow == "tune" else [],
        model_time=_model_time(store) if manifest.flow == "tune" else None,
    )


def _attempt(store: RunStore, attempt: dict[str, Any], evaluation: dict | None) -> AttemptView:
    directory = store.attempt_dir(attempt["number"])
    diff_path = directory / "diff.patch"
    diff = diff_path.read_text(errors="replace") if diff_path.is_file() else ""
    note = attempt.get("reason") or attempt.get("error") or ""
    return AttemptView(
        number=attempt["number"],
        status=attempt["status"],
        exit_reason=attempt["exit_reason"],
        note=str(note),
        agent_seconds=attempt["agent_seconds"],
        check_seconds=attempt["check_seconds"],
        changed_paths=[f"{c['path']} ({c['kind']})" for c in attempt["changes"]],
        diff=diff[:DIFF_CHARACTERS],
        diff_cut=len(diff) > DIFF_CHARACTERS,
        gates=[_gate(verdict) for verdict in load_verdicts(directory)],
        latencies=workload_latencies(evaluation) if evaluation else [],
        evaluation_line=_evaluation_line(evaluation),
        transcript=transcript_steps(read_json(directory / "transcript.json")),
    )


def _gate(verdict) -> GateView:
    outcome = "pass" if verdict.passed else "fail"
    if verdict.details.get("skipped"):
        outcome = "skipped"
    details = json.dumps(verdict.details, indent=2, sort_keys=True, default=str)
    if verdict.evidence:
        details += "\nevidence files: " + ", ".join(verdict.evidence)
    return GateView(
        gate=verdict.gate,
        outcome=outcome,
        summary=verdict.summary,
        seconds=verdict.seconds,
        details_json=cut(details, DETAIL_CHARACTERS),
    )


def _evaluation_line(evaluation: dict | None) -> str:
    if not evaluation:
        return ""
    line = f"evaluator: {evaluation.get('status')} on {evaluation.get('device', 'cpu')}"
    if evaluation.get("reason"):
        line += f": {evaluation['reason']}"
    promotion = (evaluation.get("timing") or {}).get("promotion") or {}
    if promotion:
        verdict = "promoted" if promotion.get("promoted") else "not promoted"
        line += f"; {verdict}: {promotion.get('reason', '')}"
    return line


def _speedups(evaluations: dict[int, dict | None], promoted: set[int]) -> list[SpeedupPoint]:
    from gates.tuning.reading import read_evaluation

    points = []
    for number, evaluation in sorted(evaluations.items()):
        if not evaluation:
            continue
        for row in read_evaluation(evaluation).workloads:
            points.append(
                SpeedupPoint(
                    attempt=number,
                    workload=row.name,
                    speedup=row.speedup,
                    low=row.speedup_low,
                    high=row.speedup_high,
                    promoted=number in promoted,
                )
            )
    return points


def _incumbent_attempts(store: RunStore) -> set[int]:
    from controller.flows.tune_incumbents import all_incumbents

    return {incumbent.attempt for incumbent in all_incumbents(store.run_dir)}


def _tuning_lines(store: RunStore, report: dict[str, Any]) -> list[str]:
    from controller.flows.tune_incumbents import all_incumbents

    lines = [f"stopped: {report['reason'] or 'not yet (the run is ' + report['state'] + ')'}"]
    best = all_incumbents(store.run_dir)[-1:] or None
    if not best or best[0].attempt == 0:
        lines.append("incumbent: the production kernel (no candidate was promoted)")
    else:
        speedup = best[0].reading.weighted_speedup() if best[0].reading else None
        shown = f"x{speedup:.3f}" if speedup else "n/a"
        lines.append(f"incumbent: attempt {best[0].attempt}, {shown} in model time over production")
    device = store.manifest_for_reading()[0].gate_settings.get("device", "cpu")
    if device != "cuda":
        lines.append(
            f"device {device}: correctness under the Triton interpreter; nothing was timed, "
            "so nothing could be promoted"
        )
    return lines


def _model_time(store: RunStore) -> ModelTime | None:
    """The operator's share of one forward, with production and with the final incumbent:
    calls per forward x per-call time, summed over the workloads, per timing round."""
    from controller.flows.tune_incumbents import all_incumbents

    best = all_incumbents(store.run_dir)[-1:]
    if not best or best[0].attempt == 0 or not best[0].evaluation or not best[0].reading:
        return None
    calls = {row.name: row.model_calls for row in best[0].reading.workloads}
    rounds = round_medians(best[0].evaluation)
    figures = []
    for role, label in (("baseline", "production kernel"), ("candidate", "tuned kernel")):
        per_round = _weighted_rounds(rounds, calls, role)
        if not per_round:
            return None
        figures.append(
            TimeFigure(
                group="this operator per forward",
                label=label,
                median=sorted(per_round)[len(per_round) // 2],
                low=min(per_round),
                high=max(per_round),
            )
        )
    before, after = figures[0].median, figures[1].median
    return ModelTime(
        title="The model's time in this operator",
        unit="us per forward",
        sentence=(
            f"calls per forward x per-call time, over every workload: {before:.2f} us with the "
            f"production kernel, {after:.2f} us with attempt {best[0].attempt}'s kernel "
            f"(x{before / after:.3f}); bars span the timing rounds"
        ),
        figures=figures,
    )


def _weighted_rounds(rounds: dict, calls: dict[str, float], role: str) -> list[float]:
    series = [rounds[name][role] for name in calls if role in rounds.get(name, {})]
    if len(series) != len(calls) or not series:
        return []
    count = min(len(values) for values in series)
    names = list(calls)
    return [
        sum(calls[name] * rounds[name][role][index] for name in names) for index in range(count)
    ]


def _outcome(report: dict[str, Any]) -> str:
    if report["state"] != "done":
        return report["state"]
    return "accepted; published" if report["published"] else "done"


def _compact(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


PICTURES = (
    ("screen.png", "image/png", "The screen of the declared space: each point's weighted time."),
    (
        "screen.svg",
        "image/svg+xml",
        "The screen of the declared space: each point's weighted time.",
    ),
    ("latency.svg", "image/svg+xml", "Each timed attempt's latency against the baseline."),
)


def evidence_pictures(evidence: Path) -> list[tuple[str, str]]:
    """The pictures the evidence folder holds, as data: URIs, so the page stays one file."""
    import base64

    found = []
    for name, kind, caption in PICTURES:
        path = evidence / name
        if path.is_file():
            data = base64.b64encode(path.read_bytes()).decode()
            found.append((caption, f"data:{kind};base64,{data}"))
    return found
