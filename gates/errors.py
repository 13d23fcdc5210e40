"""Errors a user can cause at the gates: a malformed task package or solution."""


class GateError(Exception):
    """A gate or the evaluator cannot start because its input is wrong; the message says what."""
