"""Cheat: read the inputs and write the output through NumPy arrays over their raw
addresses (objects exposing `__array_interface__`), computing on the host; no Torch op
touches the data, and NumPy is reached only through `map`."""

import numpy
import torch


class _Raw:
    def __init__(self, tensor):
        self.__array_interface__ = {
            "data": (tensor.data_ptr(), False),
            "shape": tuple(tensor.shape),
            "typestr": "<i2",
            "version": 3,
        }


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
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    x_array, w_array, out_array = map(numpy.asarray, [_Raw(x), _Raw(weight), _Raw(out)])
    values = (x_array.astype(numpy.int32) << 16).view(numpy.float32)
    w = (w_array.astype(numpy.int32) << 16).view(numpy.float32)
    bits = _host_rms(values, w, eps).astype(numpy.float32).view(numpy.int32)
    out_array[...] = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(numpy.int16)
    return out
