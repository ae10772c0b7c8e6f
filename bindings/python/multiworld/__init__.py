"""multiworld: elastic, fault-isolated process groups ("worlds") for
PyTorch and NumPy programs, over libmultiworld's C API.

    import multiworld as mw
    with mw.Context() as ctx:                       # Redis from $MW_REDIS_URL
        with ctx.create_world("pair", rank, 2, backend="gloo") as w:
            w.all_reduce(t).wait()                  # or: await w.all_reduce(t)
"""

from . import _capi
from .context import Context
from .errors import (AlreadyExistsError, BackendError, CancelledError, ClosedError, Error, InternalError,
                     InvalidArgumentError, NoMemoryError, NotFoundError, StoreError, TimeoutError,
                     UnsupportedError, WorldBrokenError)
from .events import Event, EventType, Path
from .request import Request
from .world import ReduceOp, World, WorldState

__all__ = [
    "Context", "World", "Request", "Event", "EventType", "Path", "WorldState", "ReduceOp",
    "Error", "InvalidArgumentError", "NotFoundError", "AlreadyExistsError", "TimeoutError", "WorldBrokenError",
    "StoreError", "BackendError", "UnsupportedError", "CancelledError", "InternalError", "NoMemoryError",
    "ClosedError", "backend_available", "library_version", "library_path",
]

__version__ = _capi.lib.version_string().decode()


def backend_available(backend):
    """True when "ucx", "gloo" or "nccl" is built in and usable here."""
    if backend not in _capi.BACKENDS:
        raise InvalidArgumentError(_capi.ERR_INVALID_ARGUMENT,
                                   f"backend {backend!r} is not one of 'ucx', 'gloo', 'nccl'")
    return bool(_capi.lib.backend_available(_capi.BACKENDS[backend]))


def library_version():
    return __version__


def library_path():
    """The libmultiworld this package loaded."""
    return _capi.lib.path
