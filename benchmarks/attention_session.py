"""Write the scripted tune session that submits benchmarks/split_kv_attention_flash.py.

The session writes the kernel module over the solution's copy of the operator file, with its
repository imports made relative as the vendored solution's are, so
`controller tune run --operator split_kv_attention --agent scripted:SESSION` judges it by every
tuning gate. Run it after editing the kernel: `python benchmarks/attention_session.py`
(`--check` exits 1 when the session file is stale).
"""

import argparse
import json
import sys
from pathlib import Path

import solution_session

BENCHMARKS = Path(__file__).resolve().parent
KERNEL_FILE = BENCHMARKS / "split_kv_attention_flash.py"
SESSION_FILE = BENCHMARKS / "sessions" / "tune_split_kv_attention.json"
SOLUTION_PATH = "solution/operators/catalog/split_kv_attention.py"


def solution_source(kernel_source: str) -> str:
    """The kernel module as the solution's operator file (`solution_session`'s rewrite)."""
    return solution_session.solution_source(kernel_source, "split_kv_attention")


def session_text() -> str:
    """The session file's content: one attempt that writes the whole operator file."""
    action = {
        "tool": "write",
        "path": SOLUTION_PATH,
        "content": solution_source(KERNEL_FILE.read_text()),
    }
    return json.dumps({"attempts": [[action]]}, indent=2) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the session is stale")
    args = parser.parse_args()
    text = session_text()
    if args.check:
        current = SESSION_FILE.read_text() if SESSION_FILE.is_file() else ""
        if current != text:
            print(f"{SESSION_FILE} is stale: run python benchmarks/attention_session.py")
            return 1
        return 0
    SESSION_FILE.write_text(text)
    print(f"wrote {SESSION_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
