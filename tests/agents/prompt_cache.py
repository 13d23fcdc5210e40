"""Anthropic's prompt caching as its documentation describes it, for the loopback server.

A request's prefix (tools, then system, then messages, block by block) is cached at each block
marked `cache_control`; a later request reads the longest cached prefix it starts with and
writes from there up to its last mark; everything after is fresh input. Tokens are estimated
at four characters each, so costs compare like with like between two runs of one session.
"""

from __future__ import annotations

import hashlib
import json


class PromptCache:
    """The server side of prompt caching: what was written, and the usage a request earns."""

    def __init__(self) -> None:
        self.cached: set[str] = set()

    def usage(self, body: dict) -> dict[str, int]:
        """input_tokens (fresh), cache_creation_input_tokens and cache_read_input_tokens."""
        blocks = _blocks(body)
        tokens = [max(1, len(text) // 4) for text, _ in blocks]
        digests, running = [], hashlib.sha256()
        for text, _ in blocks:
            running.update(text.encode())
            digests.append(running.copy().hexdigest())
        marks = [index for index, (_, marked) in enumerate(blocks) if marked]
        hits = [index for index, digest in enumerate(digests) if digest in self.cached]
        read_end = hits[-1] + 1 if hits else 0
        write_end = max(marks[-1] + 1, read_end) if marks else read_end
        self.cached.update(digests[index] for index in marks)
        return {
            "input_tokens": sum(tokens[write_end:]),
            "cache_creation_input_tokens": sum(tokens[read_end:write_end]),
            "cache_read_input_tokens": sum(tokens[:read_end]),
        }


def _blocks(body: dict) -> list[tuple[str, bool]]:
    """(canonical text without the mark, marked) for every block of the prefix, in order."""
    items: list[dict] = list(body.get("tools") or [])
    system = body.get("system")
    items += [{"type": "text", "text": system}] if isinstance(system, str) else list(system or [])
    for message in body.get("messages") or []:
        content = message.get("content")
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        items += [{"role": message.get("role"), **block} for block in content or []]
    blocks = []
    for item in items:
        marked = "cache_control" in item
        plain = {key: value for key, value in item.items() if key != "cache_control"}
        blocks.append((json.dumps(plain, sort_keys=True), marked))
    return blocks
