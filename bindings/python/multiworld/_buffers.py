"""What the library needs from a torch.Tensor or a numpy.ndarray: address,
element count, mw dtype and device, after checking that it can be handed
over as it is (contiguous, a dtype the library has, native byte order,
writable where written).

Neither torch nor numpy is imported here: an object can only be a tensor
of a module the program already imported."""

import sys

from . import _capi
from .errors import invalid


class Buffer:
    __slots__ = ("ptr", "count", "dtype", "device", "obj")

    def __init__(self, ptr, count, dtype, device, obj):
        self.ptr = ptr          # int address; 0 for an empty buffer
        self.count = count      # elements
        self.dtype = dtype      # mw_dtype_t
        self.device = device    # None: host memory; else the CUDA ordinal
        self.obj = obj          # the tensor or array, kept alive by its request


_torch_dtypes = None
_numpy_dtypes = None
_DTYPE_NAMES = {_capi.INT8: "int8", _capi.UINT8: "uint8", _capi.INT32: "int32", _capi.UINT32: "uint32",
                _capi.INT64: "int64", _capi.UINT64: "uint64", _capi.FLOAT16: "float16",
                _capi.BFLOAT16: "bfloat16", _capi.FLOAT32: "float32", _capi.FLOAT64: "float64"}


def dtype_name(dtype):
    return _DTYPE_NAMES[dtype]


def _torch_map(torch):
    global _torch_dtypes
    if _torch_dtypes is None:
        m = {torch.int8: _capi.INT8, torch.uint8: _capi.UINT8, torch.int32: _capi.INT32,
             torch.int64: _capi.INT64, torch.float16: _capi.FLOAT16, torch.bfloat16: _capi.BFLOAT16,
             torch.float32: _capi.FLOAT32, torch.float64: _capi.FLOAT64}
        # Newer torch has these; 1.13 does not (numpy arrays carry them there).
        for name, dt in (("uint32", _capi.UINT32), ("uint64", _capi.UINT64)):
            if hasattr(torch, name):
                m[getattr(torch, name)] = dt
        _torch_dtypes = m
    return _torch_dtypes


def _numpy_map(np):
    global _numpy_dtypes
    if _numpy_dtypes is None:
        _numpy_dtypes = {np.dtype(t): dt for t, dt in (
            (np.int8, _capi.INT8), (np.uint8, _capi.UINT8), (np.int32, _capi.INT32), (np.uint32, _capi.UINT32),
            (np.int64, _capi.INT64), (np.uint64, _capi.UINT64), (np.float16, _capi.FLOAT16),
            (np.float32, _capi.FLOAT32), (np.float64, _capi.FLOAT64))}
    return _numpy_dtypes


def _from_torch(t, what):
    dt = _torch_dtypes.get(t.dtype)
    if dt is None:
        raise invalid(f"{what}: dtype {t.dtype} is not supported (int8, uint8, int32, int64, float16, bfloat16, "
                      "float32, float64; uint32 and uint64 as numpy arrays)")
    if t.layout is not _strided:
        raise invalid(f"{what}: a {t.layout} tensor; only dense (strided) tensors can be sent")
    if not t.is_contiguous():
        raise invalid(f"{what}: tensor of shape {tuple(t.shape)} with strides {t.stride()} is not contiguous; "
                      "pass t.contiguous()")
    if t.is_cpu:
        device = None
    elif t.is_cuda:
        device = t.get_device()
    else:
        raise invalid(f"{what}: tensor on device '{t.device}'; use CPU tensors (host worlds) or CUDA tensors "
                      "(NCCL worlds)")
    return Buffer(t.data_ptr(), t.numel(), dt, device, t)


def _from_numpy(a, np, what, writable):
    dt = _numpy_map(np).get(a.dtype)
    if dt is None:
        order = "" if a.dtype.isnative else " (byte order not native)"
        raise invalid(f"{what}: dtype {a.dtype}{order} is not supported (int8, uint8, int32, uint32, int64, "
                      "uint64, float16, float32, float64; bfloat16 as a torch tensor)")
    flags = a.flags
    if not flags.c_contiguous:
        raise invalid(f"{what}: array of shape {a.shape} with strides {a.strides} is not C-contiguous; "
                      "pass numpy.ascontiguousarray(a)")
    if writable and not flags.writeable:
        raise invalid(f"{what}: the array is read-only and this operation writes to it")
    return Buffer(a.__array_interface__["data"][0], a.size, dt, None, a)


_Tensor = None    # torch.Tensor, once the program imported torch
_strided = None


def _see_torch():
    global _Tensor, _strided
    torch = sys.modules.get("torch")
    if torch is not None and hasattr(torch, "Tensor"):
        _torch_map(torch)
        _strided = torch.strided
        _Tensor = torch.Tensor


def adapt(obj, what, writable):
    """A Buffer over `obj`; `what` names the argument in errors."""
    if _Tensor is None:
        _see_torch()
    if _Tensor is not None and isinstance(obj, _Tensor):
        return _from_torch(obj, what)
    np = sys.modules.get("numpy")
    if np is not None and isinstance(obj, np.ndarray):
        return _from_numpy(obj, np, what, writable)
    raise invalid(f"{what}: expected a torch.Tensor or a numpy.ndarray, got {type(obj).__name__}")
