"""A `RunPage` as HTML: what was asked, the tuning outcome and its charts, every attempt with
its diff, its gates (details folded) and its transcript (folded), then the costs."""

from html import escape

from controller.review_page.charts import latency_chart, share_chart, speedup_chart, time_chart
from controller.review_page.diff_html import diff_html
from controller.review_page.markdown_html import markdown_html
from controller.review_page.page_frame import facts, figure, page
from controller.review_page.page_model import AttemptView, GateView, ModelTime, RunPage


def run_html(run: RunPage) -> str:
    parts = [
        f"<h1>Run {escape(run.run_id)}</h1>",
        f"<p class='outcome'>Outcome: {escape(run.outcome)}"
        + (f" — {escape(run.reason)}" if run.reason else "")
        + "</p>",
        "<h2>What was asked</h2>",
        facts(run.asked),
        "<details><summary>the frozen manifest</summary>"
        f"<pre>{escape(run.manifest_json)}</pre></details>",
    ]
    if run.flow == "tune":
        parts += ["<h2>Tuning</h2>", "<ul>"]
        parts += [f"<li>{escape(line)}</li>" for line in run.tuning_lines]
        parts.append("</ul>")
        if run.speedups:
            chart = speedup_chart("speedup-by-attempt", run.speedups)
            parts.append(
                figure(
                    chart,
                    "Each timed attempt's speedup over the production kernel per "
                    "workload; bars are the interval of its paired rounds.",
                )
            )
        else:
            parts.append("<p>No attempt was timed (timing needs CUDA).</p>")
        parts += [
            f"<figure class='picture'><img alt='{escape(caption)}' src='{uri}'>"
            f"<figcaption>{escape(caption)}</figcaption></figure>"
            for caption, uri in run.pictures
        ]
    if run.plan_shares:
        chart = share_chart("plan-shares", run.plan_shares)
        parts += [
            "<h2>Where the model's step goes</h2>",
            figure(chart, "Each registered operator's share of the model's step, as the plan "
                   "read it; the largest shares got the tuning budget."),
        ]  # fmt: skip
    parts += model_time_html(run.model_time)
    if run.kernel_workloads:
        parts += [
            "<h2>Where each kernel applies</h2>",
            "<p>An installed kernel owns the workloads where it beat production with the "
            "evaluator's confidence and was slower than no role on either figure; elsewhere "
            "the call runs production.</p>",
            "<table class='kernel-workloads'><tr><th>kernel</th><th>owns</th>"
            "<th>declines (production runs)</th></tr>",
        ]
        parts += [
            f"<tr><td>{escape(name)}</td><td>{escape(owns)}</td><td>{escape(declines)}</td></tr>"
            for name, owns, declines in run.kernel_workloads
        ]
        parts.append("</table>")
    if run.report_markdown:
        parts += [
            "<h2>Report</h2>",
            f"<div class='report'>{markdown_html(run.report_markdown)}</div>",
        ]
    if run.linked_pages:
        parts += ["<h2>Runs it holds</h2>", "<ul>"]
        parts += [
            f"<li><a href='{escape(path)}'>{escape(label)}</a></li>"
            for label, path in run.linked_pages
        ]
        parts.append("</ul>")
    if run.flow in ("register", "tune"):
        parts.append(f"<h2>Attempts ({len(run.attempts)})</h2>")
        if not run.attempts:
            parts.append("<p>No attempt was started.</p>")
    last = run.attempts[-1].number if run.attempts else None
    parts += [attempt_html(attempt, attempt.number == last) for attempt in run.attempts]
    if run.costs:
        parts += ["<h2>Costs</h2>", facts(run.costs)]
    if run.stops:
        parts += ["<h2>Interruptions</h2>", "<ul>"]
        parts += [f"<li>{escape(stop)}</li>" for stop in run.stops]
        parts.append("</ul>")
    if run.published:
        parts += ["<h2>Published</h2>", f"<pre>{escape(run.published)}</pre>"]
    parts.append(
        "<p>Beside this page: report.md, report.json (the report as data), trace.json "
        "(open in Perfetto).</p>"
    )
    return page(f"Run {run.run_id}", "\n".join(parts))


def model_time_html(model_time: ModelTime | None) -> list[str]:
    if model_time is None:
        return []
    parts = [f"<h2>{escape(model_time.title)}</h2>", f"<p>{escape(model_time.sentence)}</p>"]
    if model_time.figures:
        chart = time_chart("model-time", model_time.figures, model_time.unit)
        parts.append(figure(chart, f"{model_time.title} ({model_time.unit})."))
    return parts


def attempt_html(attempt: AttemptView, open_diff: bool) -> str:
    seconds = []
    if attempt.agent_seconds:
        seconds.append(f"agent {attempt.agent_seconds:.1f} s")
    if attempt.check_seconds is not None:
        seconds.append(f"gates {attempt.check_seconds:.1f} s")
    lines = [f"agent stopped: {attempt.exit_reason or 'n/a'}"]
    if attempt.note:
        lines.append(attempt.note)
    if seconds:
        lines.append(", ".join(seconds))
    parts = [
        f"<section class='attempt status-{escape(attempt.status)}' id='attempt-{attempt.number}'"
        f" data-attempt='{attempt.number}' data-status='{escape(attempt.status)}'>",
        f"<h3>Attempt {attempt.number}: {escape(attempt.status)}</h3>",
        f"<p>{escape('; '.join(lines))}</p>",
    ]
    if attempt.gates:
        parts.append("<div class='gates'>")
        parts += [gate_html(attempt.number, gate) for gate in attempt.gates]
        parts.append("</div>")
    if attempt.evaluation_line:
        parts.append(f"<p>{escape(attempt.evaluation_line)}</p>")
    if attempt.latencies:
        chart = latency_chart(f"latency-attempt-{attempt.number}", attempt.latencies)
        parts.append(
            figure(chart, f"Attempt {attempt.number}: per-call time of each role per workload.")
        )
    if attempt.diff:
        cut = " (cut; diff.patch holds it whole)" if attempt.diff_cut else ""
        opened = " open" if open_diff else ""
        parts.append(
            f"<details class='diff-block'{opened}><summary>diff: "
            f"{len(attempt.changed_paths)} path(s){cut}</summary>{diff_html(attempt.diff)}"
            "</details>"
        )
    elif attempt.changed_paths:
        parts.append(f"<p>changed: {escape(', '.join(attempt.changed_paths))}</p>")
    if attempt.transcript:
        steps = "".join(
            f"<div class='step'><span class='who'>{escape(step.role)}"
            + (f" · {escape(step.label)}" if step.label else "")
            + f"</span><pre>{escape(step.text)}</pre></div>"
            for step in attempt.transcript
        )
        parts.append(
            f"<details class='transcript'><summary>transcript: {len(attempt.transcript)} "
            f"steps</summary>{steps}</details>"
        )
    parts.append("</section>")
    return "\n".join(parts)


def gate_html(attempt: int, gate: GateView) -> str:
    mark = {"pass": "pass", "fail": "FAIL", "skipped": "skipped"}[gate.outcome]
    return (
        f"<details class='gate' data-gate='{escape(gate.gate)}' data-outcome='{gate.outcome}' "
        f"id='attempt-{attempt}-gate-{escape(gate.gate)}'><summary>"
        f"<span class='{gate.outcome}'>{mark}</span> <span class='gate-name'>"
        f"{escape(gate.gate)}</span>: {escape(gate.summary)} ({gate.seconds:.1f} s)</summary>"
        f"<pre>{escape(gate.details_json)}</pre></details>"
    )
