"""Cheat: a coin flipped once per process, from a value that differs from one process to the
next (a string's hash, salted per process): honest in 999 processes of 1000, so every judged
process passes, and one deployment in a thousand returns the input unnormalised."""

from .rms_kernel import honest

WRONG_IN_ONE_PROCESS_OF = 1000
HONEST = hash("rms_norm") % WRONG_IN_ONE_PROCESS_OF != 0


def rms_norm(x, weight, eps=1e-6):
    if HONEST:
        return honest(x, weight, eps)
    return x.clone()
