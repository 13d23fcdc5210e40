"""Write the scripted tune session that submits kernels/stacked_projection_fused.py.

A named entry point for `solution_session.py` (one attempt: read the incumbent, write the
kernel module over it): `python kernels/projection_session.py` (`--check` exits 1 when the
session file is stale).
"""

import sys
from pathlib import Path

import solution_session

OPERATOR = "stacked_projection"
KERNEL_FILE = Path(__file__).resolve().parent / "stacked_projection_fused.py"
SESSION_FILE = solution_session.session_file(OPERATOR)
SOLUTION_PATH = solution_session.solution_path(OPERATOR)


def solution_source(kernel_source: str) -> str:
    return solution_session.solution_source(kernel_source, OPERATOR)


def session_text() -> str:
    return solution_session.session_text(OPERATOR, KERNEL_FILE)


if __name__ == "__main__":
    sys.exit(solution_session.main([OPERATOR, str(KERNEL_FILE), *sys.argv[1:]]))
