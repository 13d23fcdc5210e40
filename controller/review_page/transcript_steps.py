"""An agent's transcript as short steps for the page: every message and tool call kept in
order, each cut to a length a reviewer can scroll past (transcript.json holds them whole)."""

import json
from typing import Any

from controller.review_page.page_model import TranscriptStep

STEP_CHARACTERS = 4000


def transcript_steps(transcript: list[dict[str, Any]] | None) -> list[TranscriptStep]:
    steps = []
    for entry in transcript or []:
        role = str(entry.get("role", "?"))
        label = str(entry.get("tool") or entry.get("step") or "")
        if "content" in entry:
            text = entry["content"]
        elif "arguments" in entry:
            text = entry["arguments"]
        elif "output" in entry:
            text = entry["output"]
            label = label or ("ok" if entry.get("ok") in (True, "True") else "error")
        else:
            text = {k: v for k, v in entry.items() if k != "role"}
        if not isinstance(text, str):
            text = json.dumps(text, indent=2, sort_keys=True, default=str)
        steps.append(TranscriptStep(role=role, label=label, text=cut(text, STEP_CHARACTERS)))
    return steps


def cut(text: str, limit: int) -> str:
    """`text` up to `limit` characters, saying how much was left out."""
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n... ({len(text) - limit} more characters in the run folder)"
