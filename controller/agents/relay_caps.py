"""The token and dollar caps, enforced where a CLI agent's calls pass: the key relay.

A CLI decides for itself how much each call may answer; the relay bounds the call's input
from the request's size (`call_allowance`), refuses the call when the session's caps leave no
room for an answer, and otherwise rewrites the request's output limit to what is left, so a
CLI session cannot pass its caps either.
"""

from __future__ import annotations

import json

OUTPUT_LIMIT_FIELDS = {
    "/v1/messages": "max_tokens",
    "/responses": "max_output_tokens",
    "/chat/completions": "max_completion_tokens",
}
ALL_LIMIT_FIELDS = ("max_tokens", "max_output_tokens", "max_completion_tokens")


def capped_body(body: bytes, path: str, max_output_tokens: int) -> bytes:
    """The request with its output limit lowered to `max_output_tokens` (never raised); a body
    that is not a JSON object is returned as it is (the provider refuses it anyway)."""
    try:
        request = json.loads(body)
    except ValueError:
        return body
    if not isinstance(request, dict):
        return body
    present = [name for name in ALL_LIMIT_FIELDS if isinstance(request.get(name), int)]
    if not present and path in OUTPUT_LIMIT_FIELDS:  # no limit asked: set the path's own
        request[OUTPUT_LIMIT_FIELDS[path]] = max_output_tokens
    for name in present:
        request[name] = min(request[name], max_output_tokens)
    return json.dumps(request).encode()


def cap_refusal(path: str, message: str) -> bytes:
    """An error body in the provider's shape, so the CLI shows the reason and stops."""
    if path.startswith("/v1/messages"):
        error = {"type": "error", "error": {"type": "invalid_request_error", "message": message}}
    else:
        error = {"error": {"type": "invalid_request_error", "message": message, "code": None}}
    return json.dumps(error).encode()
