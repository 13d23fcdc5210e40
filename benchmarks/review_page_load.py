"""How heavy a 10-attempt tune run's review page is, and how fast headless Chromium opens it.

Issue 28's goal: under 2 MB and under 1 s. The run is a real `controller tune run` of
`rms_norm` with a scripted agent (a contract break, a slower point, a promotion, then seven no
better) and the evaluator faked at its boundary, as the tune-flow tests run it; the page is the
`evidence/report.html` the run wrote, opened five times, each in a fresh browser, timed from
navigation to the load event. Needs Chromium (`apt-get install chromium`). From the repository
root: `python benchmarks/review_page_load.py [--out DIR]`.

Its answer: docs/benchmarks.md, "Where things stand" (the review page row).
"""

import argparse
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "tune"))
sys.path.insert(0, str(ROOT / "tests" / "review_page"))

from headless_browser import PageLoad, find_browser  # noqa: E402
from tune_fixtures import (  # noqa: E402
    FakeEvaluator,
    make_target,
    mark,
    only_run,
    tune_arguments,
    write_script,
)

from controller.cli.tune_command import run_tune  # noqa: E402

ATTEMPTS = ["incorrect", "factor=1.10", "factor=0.85"] + ["factor=0.86"] * 7
LOADS = 5


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="keep the run here (default: a temporary folder)")
    arguments = parser.parse_args(argv)
    browser = find_browser()
    if browser is None:
        print("no Chromium found; install it (apt-get install chromium)", file=sys.stderr)
        return 2
    folder = arguments.out or Path(tempfile.mkdtemp(prefix="review-page-"))
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    script = write_script(folder / "session.json", *[[mark(step)] for step in ATTEMPTS])
    options = tune_arguments(
        folder / "runs",
        make_target(folder / "target"),
        operator="rms_norm",
        agent=f"scripted:{script}",
        unfenced=True,
        device="cuda",
        max_attempts=len(ATTEMPTS),
        patience=len(ATTEMPTS),
    )
    run_tune(options, evaluator=FakeEvaluator())
    run = only_run(folder / "runs")
    page = run / "evidence" / "report.html"
    seconds = []
    for _ in range(LOADS):
        load = PageLoad(browser, page)
        load.close()
        seconds.append(load.load_seconds)
    attempts = len(list((run / "attempts").iterdir()))
    print(
        f"{attempts} attempts: {page.stat().st_size / 1e6:.2f} MB, opened in "
        f"{statistics.median(seconds):.3f} s (median of {LOADS}; "
        f"{', '.join(f'{s:.3f}' for s in seconds)})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
