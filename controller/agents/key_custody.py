"""Keeps the API keys out of what another process of the same user can read.

A process's initial environment stays readable at `/proc/PID/environ` for the life of the
process, whatever it later unsets, and an unfenced agent command runs as the same user. So the
controller, as it starts, overwrites each key's value in that initial block (the key stays in
its own environment, on its heap, for the child runs that need it) and, when it will run agent
commands unfenced, marks itself non-dumpable so that `/proc/PID/mem` and `environ` of the
controller belong to root. A command running as root can still read them: a root user who
runs `--unfenced` has no fence at all.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os

KEY_VARIABLES = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")
PR_SET_DUMPABLE = 4


def scrub_initial_environment(names: tuple[str, ...] = KEY_VARIABLES) -> list[str]:
    """Blank these variables' values where the C environment holds them, then set them again
    on the heap so the process and its children still see them. Returns the names scrubbed."""
    try:
        libc = ctypes.CDLL(None)
        environ = ctypes.POINTER(ctypes.c_void_p).in_dll(libc, "environ")
    except (OSError, ValueError):
        return []
    scrubbed, index = [], 0
    while environ[index]:
        address = environ[index]
        entry = ctypes.string_at(address)
        name, _, value = entry.partition(b"=")
        if name.decode(errors="replace") in names and value:
            ctypes.memset(address + len(name) + 1, ord("x"), len(value))
            scrubbed.append(name.decode())
        index += 1
    for name in scrubbed:
        value = os.environ.get(name)
        if value is not None:
            os.environ[name] = value  # putenv: a fresh heap copy, not the scrubbed block
    return scrubbed


def refuse_same_user_inspection() -> bool:
    """Mark this process non-dumpable (no /proc/PID/mem or environ for the same user, no
    ptrace attach). False where the call is unavailable."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        return libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False
