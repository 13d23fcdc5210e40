"""Picks the `CommandRunner` a gate runs target code with, by fence name.

Its own module so that the runners (`commands.UnfencedRunner`, `fenced_runner.FencedRunner`)
share `commands` without either importing the other.
"""

from pathlib import Path

from gates.registration.commands import CommandRunner, UnfencedRunner
from gates.registration.fenced_runner import FencedRunner


def make_runner(fence: str, pycache_prefix: Path | None = None) -> CommandRunner:
    """`unfenced`, or a fence name the sandbox layer knows (`landlock`, `docker`);
    `pycache_prefix` is the runner's private bytecode cache (None: an empty one per command)."""
    if fence == "unfenced":
        return UnfencedRunner(pycache_prefix)
    return FencedRunner(fence, pycache_prefix)
