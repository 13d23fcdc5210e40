"""Kernel templates: the fused kernels the product ships in `kernels/`, each with the
`TUNING_SPACE` the `autotune` agent searches.

A model-free tune run can only search a space its incumbent declares, and the projections'
production path (BLAS products) declares none. A template gives such a run a kernel to start
from on any GPU: the files its scripted session (`kernels/sessions/tune_<operator>.json`)
writes into the solution, judged by every gate like any candidate, then searched by the tuner.
"""

from __future__ import annotations

import json
from pathlib import Path

from controller.errors import ControllerError

TEMPLATE_SESSIONS = Path(__file__).resolve().parents[2] / "kernels" / "sessions"
SOLUTION_PREFIX = "solution/"


def template_session(operator: str) -> Path:
    return TEMPLATE_SESSIONS / f"tune_{operator}.json"


def has_template(operator: str) -> bool:
    return template_session(operator).is_file()


def template_files(operator: str) -> dict[str, str]:
    """The template's sources by path inside `solution/`: every file its session's first
    attempt writes there."""
    session = template_session(operator)
    try:
        attempts = json.loads(session.read_text())["attempts"]
        actions = attempts[0]
    except FileNotFoundError:
        shipped = sorted(
            path.stem.removeprefix("tune_") for path in TEMPLATE_SESSIONS.glob("*.json")
        )
        raise ControllerError(
            f"no kernel template for {operator!r}; templates exist for {', '.join(shipped)}"
        ) from None
    except (OSError, ValueError, KeyError, IndexError) as error:
        raise ControllerError(f"kernel template {session}: unreadable ({error})") from None
    files = {
        action["path"].removeprefix(SOLUTION_PREFIX): action["content"]
        for action in actions
        if action.get("tool") == "write" and action.get("path", "").startswith(SOLUTION_PREFIX)
    }
    if not files:
        raise ControllerError(f"kernel template {session}: its first attempt writes no file")
    return files
