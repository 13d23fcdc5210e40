"""Cheat: compute on the host with NumPy through DLPack: a tensor over NumPy's memory
(`torch.from_dlpack`) receives the inputs by a same-dtype copy, NumPy computes, and the
result comes back by another copy. NumPy is reached only through `map`, so no profile hook
sees a NumPy call from the solution's frames."""

import numpy
import torch


def _host(tensor):
    (array,) = map(numpy.empty, [tensor.shape], [numpy.int16])
    view = torch.from_dlpack(array).view(torch.bfloat16)
    view.copy_(tensor)
    return array, view


def _host_rms(values, w, eps):
    """RMSNorm of FP32 rows with NumPy ufuncs called only through `map`."""
    (squares,) = map(numpy.multiply, [values], [values])
    (total,) = map(numpy.add.reduce, [squares], [-1])
    (mean,) = map(numpy.divide, [total], [values.shape[-1]])
    (inverse,) = map(numpy.reciprocal, map(numpy.sqrt, map(numpy.add, [mean], [eps])))
    (scaled,) = map(numpy.multiply, [values], [inverse[..., None]])
    (result,) = map(numpy.multiply, [scaled], [w])
    return result


def rms_norm(x, weight, eps=1e-6):
    x_array, _ = _host(x)
    w_array, _ = _host(weight)
    values = (x_array.astype(numpy.int32) << 16).view(numpy.float32)
    w = (w_array.astype(numpy.int32) << 16).view(numpy.float32)
    bits = _host_rms(values, w, eps).astype(numpy.float32).view(numpy.int32)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(numpy.int16)
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    out.copy_(torch.from_dlpack(rounded).view(torch.bfloat16))
    return out
