"""The frame every review page shares: the HTML document, its inline style sheet and a few
lines of script (unfold or fold everything). Nothing is fetched from anywhere."""

from html import escape

from controller.review_page.diff_html import diff_css

STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 0 auto; max-width: 1100px; padding: 16px;
       color: #1b1b1b; }
h1 { font-size: 22px; margin-bottom: 4px; } h2 { border-bottom: 1px solid #ccc; margin-top: 28px; }
h3 { margin-bottom: 6px; }
.outcome { font-size: 16px; font-weight: 600; }
.pass { color: #116611; } .fail { color: #b00020; } .skipped { color: #8a6d00; }
.status-accepted, .status-promoted { border-left: 4px solid #2e7d32; }
.status-rejected { border-left: 4px solid #c62828; }
.status-interrupted, .status-running, .status-checking { border-left: 4px solid #f9a825; }
section.attempt { padding: 4px 12px; margin: 14px 0; background: #fafafa; }
dl.facts { display: grid; grid-template-columns: max-content auto; gap: 2px 14px; }
dl.facts dt { font-weight: 600; } dl.facts dd { margin: 0; overflow-wrap: anywhere; }
details { margin: 4px 0; } summary { cursor: pointer; }
details.gate > summary .gate-name { font-weight: 600; }
pre { background: #f3f3f3; padding: 8px; overflow-x: auto; font-size: 12px; margin: 4px 0; }
.diff pre { background: #fdfdfd; border: 1px solid #e3e3e3; }
.step { border-top: 1px dotted #ccc; } .step .who { font-weight: 600; font-size: 12px; }
figure.chart { margin: 8px 0; } figure.chart svg { max-width: 100%; height: auto; }
figcaption { font-size: 12px; color: #444; }
table { border-collapse: collapse; } td, th { border: 1px solid #ccc; padding: 3px 8px; }
td.number { text-align: right; font-variant-numeric: tabular-nums; }
.controls button { margin-right: 6px; }
"""

SCRIPT = """
document.querySelectorAll('.controls button').forEach(function (button) {
  button.addEventListener('click', function () {
    var open = button.dataset.open === 'true';
    document.querySelectorAll('details').forEach(function (d) { d.open = open; });
  });
});
"""


def page(title: str, body: str) -> str:
    return (
        "<!DOCTYPE html>\n<html lang='en'>\n<head>\n<meta charset='utf-8'>\n"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>\n"
        f"<title>{escape(title)}</title>\n<style>{STYLE}\n{diff_css()}</style>\n</head>\n"
        "<body>\n<p class='controls'><button type='button' data-open='true'>unfold all</button>"
        "<button type='button' data-open='false'>fold all</button></p>\n"
        f"{body}\n<script>{SCRIPT}</script>\n</body>\n</html>\n"
    )


def facts(rows: list[tuple[str, str]]) -> str:
    """A definition list of label and value pairs."""
    items = "".join(f"<dt>{escape(label)}</dt><dd>{escape(value)}</dd>" for label, value in rows)
    return f"<dl class='facts'>{items}</dl>"


def figure(chart, caption: str) -> str:
    """An inline chart with its caption; `data-points` is how many points it drew."""
    return (
        f"<figure class='chart' data-chart='{escape(chart.chart_id)}' "
        f"data-points='{chart.points}'>{chart.svg}<figcaption>{escape(caption)}</figcaption>"
        "</figure>"
    )
