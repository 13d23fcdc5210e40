"""Errors a user can cause in the operator layer: bad declarations, bad profiles."""


class OperatorError(Exception):
    """A declaration, registry lookup or kernel profile is invalid; the message says what to fix."""


class ProfileError(OperatorError):
    """A tuned kernel profile cannot be loaded (tampered, or made for another environment)."""
