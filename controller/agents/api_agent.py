"""What the API backends share: model, base URL and key read in the controller, never the fence."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from types import ModuleType

from controller.agents.base import AgentSession, SessionResult
from controller.agents.chat_loop import (
    ChatLoop,
    MalformedReply,
    ProviderError,
    RetryPolicy,
    TransientError,
    TurnTimeout,
)
from controller.agents.pricing import price_for
from controller.errors import ControllerError

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
        if error.status_code in TRANSIENT_STATUS or error.status_code >= 500:
            raise TransientError(f"HTTP {error.status_code}: {error.message}") from error
        raise ProviderError(f"HTTP {error.status_code}: {error.message}") from error
    except (sdk.APIResponseValidationError, ValueError) as error:
        raise MalformedReply(str(error)) from error


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
        return ChatLoop(self.provider(), price, note, self.retry).run(session)
