"""Write the scripted tune session that submits a hand-written kernel module for an operator.

The session writes the module over the solution's copy of the operator file, with its
repository imports made relative as the vendored solution's are, so `controller tune run
--operator OP --agent scripted:kernels/sessions/tune_OP.json` judges it by every tuning gate.
Run it after editing the kernel: `python kernels/solution_session.py OP KERNEL_FILE`
(`--check` exits 1 when the session file is stale).
"""

import argparse
import json
import re
import sys
from pathlib import Path

KERNELS = Path(__file__).resolve().parent


def solution_path(operator: str) -> str:
    return f"solution/operators/catalog/{operator}.py"


def solution_source(kernel_source: str, operator: str, siblings: tuple[str, ...] = ()) -> str:
    """The kernel module as the solution's operator file: `from operators` made relative, and
    each sibling module it imports by name imported from beside it."""
    depth = len(Path(solution_path(operator)).parts) - 2
    relative = "from " + "." * (depth + 1) + "operators"
    text = re.sub(r"^from operators", relative, kernel_source, flags=re.M)
    for name in siblings:
        text = re.sub(rf"^from {name} import", f"from .{name} import", text, flags=re.M)
    return text


def sibling_modules(kernel_file: Path) -> tuple[str, ...]:
    """The modules beside a kernel file that it imports by name: they ship with it, into the
    solution's operator folder."""
    names = re.findall(r"^from (\w+) import", kernel_file.read_text(), flags=re.M)
    folder = kernel_file.parent
    return tuple(name for name in dict.fromkeys(names) if (folder / f"{name}.py").is_file())


def session_file(operator: str) -> Path:
    return KERNELS / "sessions" / f"tune_{operator}.json"


def session_text(operator: str, kernel_file: Path) -> str:
    """One attempt that reads the incumbent, writes the kernel's sibling modules beside it,
    then writes the kernel module over it."""
    path = solution_path(operator)
    siblings = sibling_modules(kernel_file)
    actions: list[dict] = [{"tool": "read", "path": path}]
    for name in siblings:
        source = (kernel_file.parent / f"{name}.py").read_text()
        actions.append(
            {
                "tool": "write",
                "path": f"{Path(path).parent.as_posix()}/{name}.py",
                "content": solution_source(source, operator, siblings),
            }
        )
    actions.append(
        {
            "tool": "write",
            "path": path,
            "content": solution_source(kernel_file.read_text(), operator, siblings),
        }
    )
    return json.dumps({"attempts": [actions]}, indent=1) + "\n"


def write_tuning(operator: str, kernel_file: Path, tuning: dict) -> None:
    """`tuning` into the kernel module's TUNING literal, then its scripted session anew (what a
    GPU sweep does with the settings it found fastest)."""
    from gates.tuning.launch_settings import (
        with_point,
    )  # the caller puts the repository on the path

    kernel_file.write_text(with_point(kernel_file.read_text(), tuning))
    main([operator, str(kernel_file)])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("operator")
    parser.add_argument("kernel_file", type=Path)
    parser.add_argument("--check", action="store_true", help="exit 1 if the session is stale")
    arguments = parser.parse_args(argv)
    text = session_text(arguments.operator, arguments.kernel_file)
    target = session_file(arguments.operator)
    if arguments.check:
        if not target.is_file() or target.read_text() != text:
            print(f"{target} is stale: run python kernels/solution_session.py")
            return 1
        return 0
    target.write_text(text)
    print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
