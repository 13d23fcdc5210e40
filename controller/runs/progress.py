"""Progress shown while agents and gates run: a rich status line on a terminal, quiet otherwise."""

import contextlib
import sys
from collections.abc import Iterator


class Progress:
    """Reports what the engine is doing; silent when stdout is not a terminal (CI, pipes)."""

    def __init__(self, enabled: bool | None = None) -> None:
        self.enabled = sys.stdout.isatty() if enabled is None else enabled
        self._console = None
        if self.enabled:
            from rich.console import Console

            self._console = Console()

    def note(self, message: str) -> None:
        """One line of progress, e.g. a state transition."""
        if self._console is not None:
            self._console.print(f"[dim]controller[/dim] {message}", highlight=False)

    @contextlib.contextmanager
    def phase(self, message: str) -> Iterator[None]:
        """A spinner for a long step (an agent session, the gates)."""
        if self._console is None:
            yield
            return
        with self._console.status(message):
            yield
