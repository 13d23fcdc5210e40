"""A tune-all batch folder read into a `BatchPage`: its selection and options, one row per
operator with a link to its run's page, the device check, and the model's time where the
folder holds verify results."""

from pathlib import Path

from controller.review_page.model_timing import model_time_from_verify
from controller.review_page.page_model import BatchPage, OperatorRow


def read_batch(batch: Path) -> BatchPage:
    from controller.batch import record as records
    from controller.batch.summary import device_check, summarize_operator

    record = records.load(batch)
    rows = []
    for name in record.operators:
        row = summarize_operator(batch, name, record.entries[name])
        page = Path(row.run_dir) / "evidence" / "report.html" if row.run_dir else None
        rows.append(
            OperatorRow(
                **row.model_dump(
                    include={
                        "operator",
                        "status",
                        "baseline_us",
                        "tuned_us",
                        "speedup",
                        "weakest_round_speedup",
                        "stop_reason",
                    }
                ),
                run_page=_relative(page, batch) if page and page.is_file() else None,
            )
        )
    options = record.options
    summary_path = batch / "summary.json"
    check = ""
    if summary_path.is_file():
        from controller.batch.summary import BatchSummary

        check = device_check(BatchSummary.model_validate_json(summary_path.read_text()))
    return BatchPage(
        batch_id=record.batch_id,
        state=record.state,
        asked=[
            ("operators", ", ".join(record.operators)),
            ("agent", options.agent),
            ("device", options.device),
            ("target", options.target),
            ("fence", "UNFENCED" if options.unfenced else options.fence),
            ("workloads", f"captured in {record.capture}" if record.capture else "the catalog's"),
            ("options", options.model_dump_json(exclude_none=True)),
        ],
        operators=rows,
        device_check=check,
        model_time=model_time_from_verify(batch),
    )


def _relative(path: Path, start: Path) -> str:
    import os

    return os.path.relpath(path, start)
