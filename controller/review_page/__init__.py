"""The one page a reviewer opens: a self-contained HTML file per run or batch (no network).

`write_html_report(run_or_batch_dir)` writes it (errors raise); flows call
`write_review_page`, which records a page that cannot be drawn instead of failing the run."""

from controller.review_page.write import write_html_report, write_review_page

__all__ = ["write_html_report", "write_review_page"]
