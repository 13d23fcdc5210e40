"""`write_html_report`: one self-contained page per run folder (evidence/report.html) or
tune-all batch folder (report.html), rebuilt from the folder's files every time."""

from pathlib import Path

from controller.errors import ControllerError
from controller.runs.store import write_atomic

PAGE = "report.html"
FLOWS_WITH_ATTEMPTS = ("register", "tune")


def write_html_report(run_or_batch_dir: Path) -> Path:
    """Write the page and return its path; a folder that is neither a run nor a batch is
    refused with a one-line ControllerError."""
    folder = Path(run_or_batch_dir)
    if (folder / "manifest.json").is_file():
        target = folder / "evidence" / PAGE
        write_atomic(target, run_page_html(folder))
        return target
    if (folder / "batch.json").is_file():
        target = folder / PAGE
        write_atomic(target, batch_page_html(folder))
        return target
    raise ControllerError(
        f"{folder} is neither a run folder (manifest.json) nor a batch folder (batch.json)"
    )


def write_review_page(run_or_batch_dir: Path) -> Path | None:
    """`write_html_report` at the end of a run or batch, where the page must never decide the
    run's outcome: a page that cannot be drawn leaves `report_html_error.txt` (the error and
    its traceback) where the page would be, and the run's own evidence stands."""
    import traceback

    try:
        return write_html_report(run_or_batch_dir)
    except Exception:  # a drawing bug must not turn a judged run into a failed one
        folder = Path(run_or_batch_dir)
        where = folder / "evidence" if (folder / "manifest.json").is_file() else folder
        write_atomic(where / "report_html_error.txt", traceback.format_exc())
        return None


def run_page_html(run_dir: Path) -> str:
    from controller.review_page.run_html import run_html
    from controller.runs.store import RunStore

    manifest, _ = RunStore.open(run_dir).manifest_for_reading()
    if manifest.flow in FLOWS_WITH_ATTEMPTS:
        from controller.review_page.run_reading import read_run

        return run_html(read_run(run_dir))
    from controller.review_page.other_run_reading import read_other_run

    return run_html(read_other_run(run_dir))


def batch_page_html(batch: Path) -> str:
    from controller.review_page.batch_html import batch_html
    from controller.review_page.batch_reading import read_batch

    return batch_html(read_batch(batch))
