"""Before a run starts: the provider answers at its base URL, accepts the key and offers the
model. Each problem is a one-line error (exit 2) instead of an attempt spent finding out.

One GET of the model's own entry (`/v1/models/<model>`), which both providers serve; an answer
other than a refusal of the key or of the model (a 5xx, a rate limit) lets the run start, since
the run's own retries handle those.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request

from controller.errors import ControllerError

TIMEOUT_S = 15.0
ANTHROPIC_VERSION = "2023-06-01"


def check_provider(
    spec: str,
    model_url: str,
    headers: dict[str, str],
    key_variable: str,
    base_url_hint: str,
) -> None:
    """Raise a ControllerError naming the problem when the provider cannot serve the run."""
    request = urllib.request.Request(model_url, headers=headers, method="GET")
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as answer:
            answer.read(64 * 1024)
    except urllib.error.HTTPError as error:
        if error.code in (401, 403):
            raise ControllerError(
                f"agent {spec}: the provider refused {key_variable} (HTTP {error.code}); "
                f"set {key_variable} to a valid key"
            ) from None
        if error.code == 404:
            model = urllib.parse.unquote(model_url.rstrip("/").rsplit("/", 1)[-1])
            raise ControllerError(
                f"agent {spec}: the provider does not offer model {model!r} "
                f"({_detail(error)}); name a model it lists at /v1/models"
            ) from None
    except (urllib.error.URLError, OSError) as error:
        reason = getattr(error, "reason", error)
        raise ControllerError(
            f"agent {spec}: cannot reach {model_url.split('/v1/')[0]} ({reason}); "
            f"check {base_url_hint}"
        ) from None


def anthropic_check(spec: str, base_url: str, key: str, model: str, key_variable: str) -> None:
    """The Anthropic Messages API: `x-api-key`, a version header, `<base>/v1/models/<id>`."""
    headers = {"x-api-key": key, "anthropic-version": ANTHROPIC_VERSION}
    entry = f"/{urllib.parse.quote(model, safe='')}" if model else ""  # no model: the list
    url = f"{base_url.rstrip('/')}/v1/models{entry}"
    check_provider(spec, url, headers, key_variable, "--base-url or ANTHROPIC_BASE_URL")


def openai_check(spec: str, base_url: str, key: str, model: str, key_variable: str) -> None:
    """An OpenAI-compatible API: a bearer key, `<base>/models/<id>` (the base holds `/v1`)."""
    headers = {"authorization": f"Bearer {key}"}
    url = f"{base_url.rstrip('/')}/models/{urllib.parse.quote(model, safe='')}"
    check_provider(spec, url, headers, key_variable, "--base-url or OPENAI_BASE_URL")


def _detail(error: urllib.error.HTTPError) -> str:
    try:
        body = json.loads(error.read(16 * 1024) or b"{}")
        message = (body.get("error") or {}).get("message") if isinstance(body, dict) else None
    except (ValueError, OSError, AttributeError):
        message = None
    return f"HTTP {error.code}" + (f": {message}" if message else "")
