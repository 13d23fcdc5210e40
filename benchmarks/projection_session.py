"""Write the scripted tune session that submits benchmarks/stacked_projection_fused.py.

The session writes the kernel module over the solution's copy of the operator file (the
production path, vendored), with its repository imports made relative as the vendored
solution's are, so `controller tune run --operator stacked_projection --agent
scripted:benchmarks/sessions/tune_stacked_projection.json` judges it by every tuning gate.
Run it after editing the kernel: `python benchmarks/projection_session.py` (`--check` exits 1
when the session file is stale).
"""

import argparse
import json
import re
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parent
KERNEL_FILE = BENCHMARKS / "stacked_projection_fused.py"
SESSION_FILE = BENCHMARKS / "sessions" / "tune_stacked_projection.json"
SOLUTION_PATH = "solution/operators/catalog/stacked_projection.py"
DEPTH = len(Path(SOLUTION_PATH).parts) - 2
"""Package levels from the operator file up to the solution's root (operators/catalog/)."""


def solution_source(kernel_source: str) -> str:
    """The kernel module as the solution's operator file: `from operators` made relative."""
    relative = "from " + "." * (DEPTH + 1) + "operators"
    return re.sub(r"^from operators", relative, kernel_source, flags=re.M)


def session_text() -> str:
    """The session file's content: one attempt that reads the incumbent, then writes the file."""
    actions = [
        {"tool": "read", "path": SOLUTION_PATH},
        {
            "tool": "write",
            "path": SOLUTION_PATH,
            "content": solution_source(KERNEL_FILE.read_text()),
        },
    ]
    return json.dumps({"attempts": [actions]}, indent=1) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the session is stale")
    args = parser.parse_args()
    text = session_text()
    if args.check:
        current = SESSION_FILE.read_text() if SESSION_FILE.is_file() else ""
        if current != text:
            print(f"{SESSION_FILE} is stale: run python benchmarks/projection_session.py")
            return 1
        return 0
    SESSION_FILE.write_text(text)
    print(f"wrote {SESSION_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
