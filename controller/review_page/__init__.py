"""The one page a reviewer opens: a self-contained HTML file per run or batch (no network).

`write_html_report(run_or_batch_dir)` is the only entry point other packages need."""

from controller.review_page.write import write_html_report

__all__ = ["write_html_report"]
