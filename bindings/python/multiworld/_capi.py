"""The C API of libmultiworld through ctypes: finding and loading the
library, the prototypes, and the enum values and struct layouts of
<multiworld/multiworld.h>.

Nothing here is compiled: the layouts are ctypes structures, kept equal to
the header by the test test_layout.py (a C program built from the header
prints the real offsets and values)."""

import ctypes
import os
import struct
from ctypes import POINTER, c_char, c_char_p, c_int, c_size_t, c_uint64, c_void_p

# The SONAME major this package is written against (MW_VERSION_MAJOR).
ABI_MAJOR = 0
SONAME = f"libmultiworld.so.{ABI_MAJOR}"

# ---- enums (values as in the header) ----------------------------------------
OK = 0
IN_PROGRESS = 1
ERR_INVALID_ARGUMENT = -1
ERR_NOT_FOUND = -2
ERR_ALREADY_EXISTS = -3
ERR_TIMEOUT = -4
ERR_WORLD_BROKEN = -5
ERR_STORE = -6
ERR_BACKEND = -7
ERR_UNSUPPORTED = -8
ERR_CANCELLED = -9
ERR_INTERNAL = -10
ERR_NO_MEMORY = -11

BACKENDS = {"gloo": 1, "nccl": 2, "ucx": 3}

# mw_dtype_t
INT8, UINT8, INT32, UINT32, INT64, UINT64, FLOAT16, BFLOAT16, FLOAT32, FLOAT64 = range(10)
DTYPE_SIZES = {INT8: 1, UINT8: 1, INT32: 4, UINT32: 4, INT64: 8, UINT64: 8,
               FLOAT16: 2, BFLOAT16: 2, FLOAT32: 4, FLOAT64: 8}

# mw_redop_t
REDOPS = {"sum": 0, "prod": 1, "min": 2, "max": 3, "avg": 4}

WORLD_READY, WORLD_BROKEN, WORLD_RETIRED = 1, 2, 3
SHRINK_DEFAULT, SHRINK_ABORT = 0, 1

# mw_op_kind_t
(OP_SEND, OP_RECV, OP_BROADCAST, OP_ALLREDUCE, OP_REDUCE, OP_ALLGATHER, OP_GATHER,
 OP_SCATTER, OP_REDUCE_SCATTER, OP_ALLTOALL, OP_BARRIER) = range(11)

# mw_event_type_t
EVENT_WORLD_BROKEN, EVENT_STORE_DOWN, EVENT_STORE_UP, EVENT_PATH_DOWN, EVENT_PATH_UP = range(1, 6)

# mw_metric_kind_t
METRIC_COUNTER, METRIC_GAUGE, METRIC_HISTOGRAM = range(1, 4)

# mw_world_params_t: MW_WORLD_PARAMS_MAGIC, and the MW_VERSION_CODE of the
# header this package was written against (0.2.0).
WORLD_PARAMS_MAGIC = 0x6D77706D
VERSION_CODE = 200
# mw_path_failover_t, mw_same_host_path_t
PATH_FAILOVER_DEFAULT, PATH_FAILOVER_ON, PATH_FAILOVER_OFF = range(3)
SAME_HOST_PATH_DEFAULT, SAME_HOST_PATH_AUTO, SAME_HOST_PATH_OFF = range(3)


# ---- structs ------------------------------------------------------------------
class Op(ctypes.Structure):
    """mw_op_t"""
    _fields_ = [("size", c_size_t), ("kind", c_int), ("sendbuf", c_void_p), ("recvbuf", c_void_p),
                ("count", c_size_t), ("dtype", c_int), ("op", c_int), ("peer", c_int),
                ("user_data", c_uint64)]


class Completion(ctypes.Structure):
    """mw_completion_t"""
    _fields_ = [("request", c_void_p), ("world", c_void_p), ("user_data", c_uint64), ("status", c_int)]


class Event(ctypes.Structure):
    """mw_event_t"""
    _fields_ = [("type", c_int), ("world", c_void_p), ("world_name", c_char * 129), ("peer_rank", c_int),
                ("reason", c_int), ("detail", c_char * 256)]


class WorldParams(ctypes.Structure):
    """mw_world_params_t"""
    _fields_ = [("size", c_size_t), ("magic", ctypes.c_uint32), ("version", ctypes.c_uint32), ("name", c_char_p),
                ("rank", c_int), ("world_size", c_int), ("backend", c_int), ("device", c_int),
                ("timeout_ms", c_int), ("op_timeout_ms", c_int), ("path_failover", c_int),
                ("same_host_path", c_int)]


class EventInfo(ctypes.Structure):
    """mw_event_info_t"""
    _fields_ = [("size", c_size_t), ("type", c_int), ("world", c_void_p), ("world_epoch", c_uint64),
                ("world_name", c_char * 129), ("peer_rank", c_int), ("reason", c_int), ("detail", c_char * 1024),
                ("path_index", c_int), ("local_address", c_char * 256), ("remote_address", c_char * 256),
                ("outstanding_messages", c_uint64), ("outstanding_bytes", c_uint64)]


class CompletionInfo(ctypes.Structure):
    """mw_completion_info_t"""
    _fields_ = [("request", c_void_p), ("world", c_void_p), ("user_data", c_uint64), ("status", c_int),
                ("kind", c_int), ("bytes", c_size_t)]


class MetricInfo(ctypes.Structure):
    """mw_metric_info_t"""
    _fields_ = [("size", c_size_t), ("name", c_char_p), ("help", c_char_p), ("kind", c_int),
                ("label_count", c_size_t), ("label_names", POINTER(c_char_p)), ("label_values", POINTER(c_char_p)),
                ("value", ctypes.c_double), ("count", c_uint64), ("bucket_count", c_size_t),
                ("bucket_bounds", POINTER(ctypes.c_double)), ("bucket_counts", POINTER(c_uint64))]


def _struct_of(cls):
    """A struct.Struct writing `cls` at the offsets ctypes computed: one
    pack_into per operation instead of a setattr per field."""
    word = {8: "Q", 4: "I"}
    codes = {c_size_t: word[ctypes.sizeof(c_size_t)], c_void_p: word[ctypes.sizeof(c_void_p)], c_int: "i",
             c_uint64: "Q"}
    fmt, pos = "=", 0
    for name, ctype in cls._fields_:
        field = getattr(cls, name)
        fmt += "x" * (field.offset - pos) + codes[ctype]
        pos = field.offset + field.size
    packer = struct.Struct(fmt + "x" * (ctypes.sizeof(cls) - pos))
    assert packer.size == ctypes.sizeof(cls)
    return packer


# Fields in Op's order: size, kind, sendbuf, recvbuf, count, dtype, op, peer, user_data.
OP_STRUCT = _struct_of(Op)


# ---- loading --------------------------------------------------------------------
def _candidates():
    """Where the library may be, in order: $MW_LIB (a file), a copy inside
    this package (a bundled build), then the loader's search path (the deb's
    libmultiworld0, LD_LIBRARY_PATH)."""
    env = os.environ.get("MW_LIB")
    if env:
        return [env]
    bundled = os.path.join(os.path.dirname(os.path.abspath(__file__)), SONAME)
    return ([bundled] if os.path.exists(bundled) else []) + [SONAME]


def _load():
    errors = []
    for path in _candidates():
        try:
            return ctypes.CDLL(path)
        except OSError as e:
            errors.append(f"{path}: {e}")
    raise ImportError(f"multiworld: cannot load {SONAME} ({'; '.join(errors)}); install libmultiworld{ABI_MAJOR}, "
                      "or set MW_LIB to the library's path")


def _prototype(lib, name, restype, *argtypes):
    fn = getattr(lib, name)
    fn.restype = restype
    fn.argtypes = list(argtypes)
    return fn


class _Lib:
    """The library's functions, with their prototypes."""

    def __init__(self, lib):
        p = lambda name, restype, *args: _prototype(lib, name, restype, *args)  # noqa: E731
        self.path = getattr(lib, "_name", SONAME)
        self.version_string = p("mw_version_string", c_char_p)
        self.version = p("mw_version", None, POINTER(c_int), POINTER(c_int), POINTER(c_int))
        self.status_string = p("mw_status_string", c_char_p, c_int)
        self.last_error = p("mw_last_error", c_char_p)
        self.backend_available = p("mw_backend_available", c_int, c_int)
        self.config_new = p("mw_config_new", c_int, POINTER(c_void_p))
        self.config_set = p("mw_config_set", c_int, c_void_p, c_char_p, c_char_p)
        self.config_free = p("mw_config_free", None, c_void_p)
        self.context_new = p("mw_context_new", c_int, c_void_p, POINTER(c_void_p))
        self.context_free = p("mw_context_free", None, c_void_p)
        self.context_fd = p("mw_context_fd", c_int, c_void_p, POINTER(c_int))
        self.context_wake = p("mw_context_wake", c_int, c_void_p)
        self.world_create_with = p("mw_world_create_with", c_int, c_void_p, POINTER(WorldParams), POINTER(c_void_p))
        self.world_destroy = p("mw_world_destroy", c_int, c_void_p)
        self.world_state = p("mw_world_state", c_int, c_void_p)
        self.world_epoch = p("mw_world_epoch", c_uint64, c_void_p)
        self.world_rank = p("mw_world_rank", c_int, c_void_p)
        self.world_size = p("mw_world_size", c_int, c_void_p)
        self.world_shrink = p("mw_world_shrink", c_int, c_void_p, POINTER(c_int), c_int, c_int, c_int,
                              POINTER(c_void_p))
        self.world_grow = p("mw_world_grow", c_int, c_void_p, c_int, c_int, POINTER(c_void_p))
        # Addresses travel as plain ints: the cheapest conversion ctypes has.
        self.submit = p("mw_submit", c_int, c_void_p, c_void_p, c_void_p)
        self.test = p("mw_test", c_int, c_void_p)
        self.wait = p("mw_wait", c_int, c_void_p, c_int)
        self.request_free = p("mw_request_free", None, c_void_p)
        self.request_cancel = p("mw_request_cancel", c_int, c_void_p)
        self.poll_info = p("mw_poll_info", c_int, c_void_p, c_void_p, c_size_t, c_size_t, c_int, POINTER(c_size_t))
        self.next_event_info = p("mw_next_event_info", c_int, c_void_p, POINTER(EventInfo), c_int)
        self.metrics_snapshot = p("mw_metrics_snapshot", c_int, c_void_p, POINTER(c_void_p))
        self.metrics_count = p("mw_metrics_count", c_size_t, c_void_p)
        self.metrics_get = p("mw_metrics_get", c_int, c_void_p, c_size_t, POINTER(MetricInfo))
        self.metrics_text = p("mw_metrics_text", c_int, c_void_p, c_char_p, c_size_t, POINTER(c_size_t))
        self.metrics_free = p("mw_metrics_free", None, c_void_p)

    def error_message(self):
        """mw_last_error() of this thread, as str."""
        return self.last_error().decode("utf-8", "replace")

    def status_name(self, status):
        return self.status_string(status).decode()


def _check_version(lib):
    major = c_int()
    lib.version(ctypes.byref(major), None, None)
    if major.value != ABI_MAJOR:
        raise ImportError(f"multiworld: {lib.path} is version {lib.version_string().decode()}, "
                          f"this package needs major version {ABI_MAJOR}")


lib = _Lib(_load())
_check_version(lib)
