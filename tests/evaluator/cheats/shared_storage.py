"""Cheat (attempted): compute on the host in pure Python, reading the inputs' bytes by
moving their storage into a shared-memory file and reading that file, and writing the
result the same way into the output's storage. Naming the storage's file starts torch's
shared-memory manager, a child process, which the candidate worker's process filter refuses
on the CPU (a runtime error; the ATen op it reaches is traced too); outside the evaluator the
file round trip did not even give the right bytes back, so this stands for the attempt, not
a working bypass."""

import os

import torch

from .host_rms import host_rms_norm


def _shared_file(tensor) -> str:
    _, name, _ = tensor.untyped_storage()._share_filename_cpu_()
    return "/dev/shm" + os.fsdecode(name)


def _bytes(tensor) -> bytes:
    with open(_shared_file(tensor), "rb") as shared:
        return shared.read(tensor.numel() * 2)


def rms_norm(x, weight, eps=1e-6):
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    packed = host_rms_norm(_bytes(x), _bytes(weight), x.shape[-1], eps)
    with open(_shared_file(out), "r+b") as shared:
        shared.write(packed)
    return out
