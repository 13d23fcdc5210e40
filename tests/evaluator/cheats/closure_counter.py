"""Cheat: the call count kept in a closure cell, out of the module's namespace; honest for the
first million calls, wrong after."""

from .rms_kernel import honest


def _counting():
    calls = 0

    def rms_norm(x, weight, eps=1e-6):
        nonlocal calls
        calls += 1
        if calls <= 1_000_000:
            return honest(x, weight, eps)
        return x.clone()

    return rms_norm


rms_norm = _counting()
