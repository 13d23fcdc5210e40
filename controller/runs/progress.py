"""Progress for the person waiting on a run: a rich spinner and lines on a terminal, and one
plain line per step with the elapsed time when stdout is a pipe (CI, `tee`).

Lower layers (gates, the evaluator) cannot import the controller, so they report through the
standard `logging` logger named `PROGRESS_LOGGER`:
`logging.getLogger("kernel_controller.progress").info("evaluator: correctness done")`.
While `Progress.listening()` is active, every such record becomes one progress line.
"""

import contextlib
import logging
import sys
import time
from collections.abc import Iterator
from typing import Literal

PROGRESS_LOGGER = "kernel_controller.progress"
Mode = Literal["rich", "lines", "off"]


class Progress:
    """Reports what the engine is doing: `rich` on a terminal, `lines` on a pipe, or `off`."""

    def __init__(self, enabled: bool | None = None, mode: Mode | None = None, stream=None):
        self.stream = stream if stream is not None else sys.stdout
        if mode is None and enabled is False:
            mode = "off"
        elif mode is None:
            mode = "rich" if self.stream.isatty() else "lines"
        self.mode: Mode = mode
        self.started = time.monotonic()
        self._console = None
        if mode == "rich":
            from rich.console import Console

            self._console = Console(file=self.stream)

    def elapsed_s(self) -> float:
        return time.monotonic() - self.started

    def note(self, message: str) -> None:
        """One line of progress, e.g. a state transition or a gate's verdict."""
        if self.mode == "lines":
            self.stream.write(f"[{self.elapsed_s():7.1f}s] {message}\n")
            self.stream.flush()
        elif self._console is not None:
            stamp = f"{self.elapsed_s():6.1f}s"
            self._console.print(f"[dim]{stamp}[/dim] {message}", highlight=False)

    @contextlib.contextmanager
    def phase(self, message: str) -> Iterator[None]:
        """A long step (an agent session, the gates): a spinner on a terminal, a line on a pipe."""
        if self._console is not None:
            with self._console.status(message):
                yield
            return
        self.note(message)
        yield

    @contextlib.contextmanager
    def listening(self) -> Iterator[None]:
        """Turn records of the `PROGRESS_LOGGER` logger into progress lines for the block."""
        if self.mode == "off":
            yield
            return
        logger = logging.getLogger(PROGRESS_LOGGER)
        handler = _ProgressHandler(self)
        previous_level = logger.level
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        try:
            yield
        finally:
            logger.removeHandler(handler)
            logger.setLevel(previous_level)


class _ProgressHandler(logging.Handler):
    def __init__(self, progress: Progress) -> None:
        super().__init__(logging.INFO)
        self.progress = progress

    def emit(self, record: logging.LogRecord) -> None:
        self.progress.note(record.getMessage())


def transition_suffix(fields: dict) -> str:
    """` (attempt=2, reason=...)` for a transition's progress line."""
    details = [f"{key}={fields[key]}" for key in ("attempt", "reason") if fields.get(key)]
    return f" ({', '.join(details)})" if details else ""


def session_line(result, seconds: float) -> str:
    """`agent finished in ... (turns, tokens, cost)`: an agent session, as one progress line."""
    turns = sum(1 for event in result.events if event.category == "agent_turn")
    usage = result.usage
    tokens = usage.input_tokens + usage.output_tokens
    return (
        f"agent {result.exit_reason} in {seconds:.1f} s ({turns} turns, {tokens} tokens, "
        f"${usage.dollars:.4f})"
    )
