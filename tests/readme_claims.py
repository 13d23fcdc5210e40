"""What the README claims about its commands, read from the README itself, so a test can hold
each command to its claim and the README cannot drift from what the commands print."""

import re
import shlex
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def readme() -> str:
    return README.read_text()


def command(starting: str) -> list[str]:
    """The arguments after `controller` of the README's first shell line holding `starting`."""
    for block in re.findall(r"```bash\n(.*?)```", readme(), flags=re.S):
        for line in block.splitlines():
            if starting in line:
                words = shlex.split(line.split("&&")[-1])
                return words[words.index(next(w for w in words if w.endswith("controller"))) + 1 :]
    raise AssertionError(f"the README shows no command with {starting!r}")


def demo_gate_count() -> int:
    """The gates the README says the demo's second attempt passes."""
    found = re.search(r"attempt 2 passes all (\d+) gates", readme())
    assert found, "the README no longer says how many gates the demo's attempt 2 passes"
    return int(found.group(1))
