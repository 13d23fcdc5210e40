"""What the API backends share: model, base URL and key read in the controller, never the fence."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from types import ModuleType

from controller.agents.base import AgentSession, SessionResult
from controller.agents.chat_loop import (
    ChatLoop,
    KeyRefused,
    MalformedReply,
    ProviderError,
    RetryPolicy,
    TransientError,
    TurnTimeout,
)
from controller.agents.pricing import price_for
from controller.errors import ControllerError, ProviderUnavailable

TRANSIENT_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504, 529})


@contextlib.contextmanager
def sdk_errors(sdk: ModuleType, timeout_s: float) -> Iterator[None]:
    """Turn an official SDK's exceptions (both SDKs name them alike) into the chat loop's."""
    try:
        yield
    except sdk.APITimeoutError as error:
        raise TurnTimeout(f"no answer within {timeout_s:.0f}s") from error
    except sdk.APIConnectionError as error:
        raise TransientError(f"connection failed: {error}") from error
    except sdk.APIStatusError as error:
        status = error.status_code
        if status in TRANSIENT_STATUS or status >= 500:
            wait = retry_after_s(getattr(error.response, "headers", {}) or {})
            raise TransientError(f"HTTP {status}: {error.message}", status, wait) from error
        if status in (401, 403):
            raise KeyRefused(f"HTTP {status}: {error.message}") from error
        raise ProviderError(f"HTTP {status}: {error.message}") from error
    except (sdk.APIResponseValidationError, ValueError) as error:
        raise MalformedReply(str(error)) from error


def retry_after_s(headers) -> float | None:
    """The wait a provider asked for: `retry-after-ms`, or `retry-after` in seconds or as an
    HTTP date; None when it asked for none."""
    import email.utils
    import time

    value = headers.get("retry-after-ms")
    if value:
        with contextlib.suppress(ValueError):
            return max(0.0, float(value) / 1000)
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


class ApiAgent:
    """An agent whose conversation the controller holds; subclasses build the provider."""

    family = ""
    key_variable = ""
    base_url_variable = ""
    key_hint = ""

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        retry: RetryPolicy | None = None,
    ):
        if not model:
            raise ControllerError(
                f"agent spec '{self.family}:' needs a model, e.g. {self.family}:<model>"
            )
        self.model = model
        self.spec = f"{self.family}:{model}"
        self.base_url = base_url or os.environ.get(self.base_url_variable) or None
        self.api_key = api_key
        self.retry = retry

    def _key(self) -> str | None:
        return self.api_key or os.environ.get(self.key_variable) or None

    def check_available(self) -> None:
        """Refuse before the run starts when no API key is set."""
        if not self._key():
            raise ControllerError(
                f"agent {self.spec} needs {self.key_variable} in the controller's environment"
                + self.key_hint
            )

    def provider(self):
        """The provider that speaks this family's wire protocol (a ChatLoop provider)."""
        raise NotImplementedError

    def run(self, session: AgentSession) -> SessionResult:
        """Hold the conversation here; only tool calls cross into the fence."""
        self.check_available()
        price, note = price_for(self.model)
        try:
            return ChatLoop(self.provider(), price, note, self.retry).run(session)
        except KeyRefused as refusal:
            raise ProviderUnavailable(
                f"{self.key_variable} was refused by the provider ({refusal}); set it to a "
                "valid key and resume the run",
                refusal.usage,
            ) from None
