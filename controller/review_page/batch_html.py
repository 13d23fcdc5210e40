"""A `BatchPage` as HTML: the selection, a row and a speedup bar per operator linking to its
run's page, the device check and the model's time before and after."""

from html import escape

from controller.review_page.charts import time_chart
from controller.review_page.page_frame import facts, figure, page
from controller.review_page.page_model import BatchPage, TimeFigure
from controller.review_page.run_html import model_time_html


def batch_html(batch: BatchPage) -> str:
    parts = [
        f"<h1>Batch {escape(batch.batch_id)}: {escape(batch.state)}</h1>",
        "<h2>What was asked</h2>",
        facts(batch.asked),
        "<h2>Operators</h2>",
        "<table><tr><th>operator</th><th>status</th><th>baseline us</th><th>tuned us</th>"
        "<th>speedup</th><th>weakest round</th><th>stop reason</th></tr>",
    ]
    for row in batch.operators:
        name = escape(row.operator)
        if row.run_page:
            name = f"<a href='{escape(row.run_page)}'>{name}</a>"
        parts.append(
            f"<tr class='operator' data-operator='{escape(row.operator)}'><td>{name}</td>"
            f"<td>{escape(row.status)}</td>"
            + "".join(
                f"<td class='number'>{_number(value, form)}</td>"
                for value, form in (
                    (row.baseline_us, ".2f"),
                    (row.tuned_us, ".2f"),
                    (row.speedup, ".3f"),
                    (row.weakest_round_speedup, ".3f"),
                )
            )
            + f"<td>{escape(row.stop_reason)}</td></tr>"
        )
    parts.append("</table>")
    timed = [row for row in batch.operators if row.baseline_us and row.tuned_us]
    if timed:
        figures = [
            TimeFigure(group=row.operator, label=label, median=value, low=value, high=value)
            for row in timed
            for label, value in (("production", row.baseline_us), ("tuned", row.tuned_us))
        ]
        chart = time_chart("operators", figures, "weighted us per call")
        parts.append(figure(chart, "Each tuned operator's weighted per-call time."))
    if batch.device_check:
        parts.append(f"<p>{escape(batch.device_check)}</p>")
    parts += model_time_html(batch.model_time)
    return page(f"Batch {batch.batch_id}", "\n".join(parts))


def _number(value: float | None, form: str) -> str:
    return "-" if value is None else format(value, form)
