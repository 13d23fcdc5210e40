"""Run one pytest session in the target tree and write each test id's outcome as JSON.

Started as a script by the tests gate (fenced, `python -B`): the tree comes first on the path,
as with `python -m pytest`, and this folder is removed from it, so the target sees none of the
controller's modules. It imports nothing from the controller's own packages.
Usage: `python -B pytest_session.py OUT.json PYTEST_ARGS...`.
"""

import json
import os
import sys


class OutcomeRecorder:
    """Collected test ids and, for each, the worst outcome of its setup, call and teardown."""

    RANK = {"collected": 0, "passed": 1, "skipped": 2, "failed": 3}

    def __init__(self) -> None:
        self.outcomes: dict[str, str] = {}

    def pytest_collection_modifyitems(self, items) -> None:
        for item in items:
            self.outcomes.setdefault(item.nodeid, "collected")

    def pytest_runtest_logreport(self, report) -> None:
        outcome = "skipped" if report.skipped else report.outcome
        if report.when != "call" and outcome == "passed":
            return
        previous = self.outcomes.get(report.nodeid, "collected")
        if self.RANK[outcome] > self.RANK[previous]:
            self.outcomes[report.nodeid] = outcome

    def pytest_collectreport(self, report) -> None:
        if report.failed:
            self.outcomes[f"<collection> {report.nodeid}"] = "failed"


def main() -> int:
    out, arguments = sys.argv[1], sys.argv[2:]
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
    sys.path.insert(0, os.getcwd())
    import pytest

    recorder = OutcomeRecorder()
    code = int(pytest.main(arguments, plugins=[recorder]))
    with open(out + ".tmp", "w") as file:
        json.dump({"exit": code, "outcomes": recorder.outcomes}, file, indent=1)
    os.replace(out + ".tmp", out)
    return code


if __name__ == "__main__":
    sys.exit(main())
