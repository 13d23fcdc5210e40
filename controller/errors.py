"""Errors a user can cause in the controller: bad targets, bad run folders, changed manifests."""


class ControllerError(Exception):
    """A run cannot start or resume as asked; the message says what was wrong and what to do."""
