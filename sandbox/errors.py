"""Errors a user can cause with fences: a fence that cannot be enforced here, a bad policy."""


class FenceError(Exception):
    """A fence cannot run the command as asked; the message says why and what to pass instead."""
