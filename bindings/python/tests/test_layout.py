"""The package's ctypes declarations against the header: a C program built
from multiworld.h ($MW_PY_LAYOUT, built by CMake) prints the real struct
layouts and enum values."""

import ctypes
import os
import subprocess

import pytest

from multiworld import _capi

# header name -> the package's value
VALUES = {
    "MW_VERSION_MAJOR": _capi.ABI_MAJOR,
    "MW_WORLD_PARAMS_MAGIC": _capi.WORLD_PARAMS_MAGIC,
    **{f"MW_PATH_FAILOVER_{n}": getattr(_capi, f"PATH_FAILOVER_{n}") for n in ("DEFAULT", "ON", "OFF")},
    **{f"MW_SAME_HOST_PATH_{n}": getattr(_capi, f"SAME_HOST_PATH_{n}") for n in ("DEFAULT", "AUTO", "OFF")},
    "MW_OK": _capi.OK, "MW_IN_PROGRESS": _capi.IN_PROGRESS,
    **{f"MW_ERR_{n}": getattr(_capi, f"ERR_{n}") for n in (
        "INVALID_ARGUMENT", "NOT_FOUND", "ALREADY_EXISTS", "TIMEOUT", "WORLD_BROKEN", "STORE", "BACKEND",
        "UNSUPPORTED", "CANCELLED", "INTERNAL", "NO_MEMORY")},
    **{f"MW_BACKEND_{n.upper()}": v for n, v in _capi.BACKENDS.items()},
    **{f"MW_{n}": getattr(_capi, n) for n in (
        "INT8", "UINT8", "INT32", "UINT32", "INT64", "UINT64", "FLOAT16", "BFLOAT16", "FLOAT32", "FLOAT64")},
    **{f"MW_{n.upper()}": v for n, v in _capi.REDOPS.items()},
    "MW_WORLD_READY": _capi.WORLD_READY, "MW_WORLD_BROKEN": _capi.WORLD_BROKEN,
    "MW_WORLD_RETIRED": _capi.WORLD_RETIRED,
    "MW_SHRINK_DEFAULT": _capi.SHRINK_DEFAULT, "MW_SHRINK_ABORT": _capi.SHRINK_ABORT,
    **{f"MW_OP_{n}": getattr(_capi, f"OP_{n}") for n in (
        "SEND", "RECV", "BROADCAST", "ALLREDUCE", "REDUCE", "ALLGATHER", "GATHER", "SCATTER", "REDUCE_SCATTER",
        "ALLTOALL", "BARRIER")},
    **{f"MW_EVENT_{n}": getattr(_capi, f"EVENT_{n}") for n in (
        "WORLD_BROKEN", "STORE_DOWN", "STORE_UP", "PATH_DOWN", "PATH_UP")},
    **{f"MW_METRIC_{n}": getattr(_capi, f"METRIC_{n}") for n in ("COUNTER", "GAUGE", "HISTOGRAM")},
}
STRUCTS = {"mw_op_t": _capi.Op, "mw_completion_t": _capi.Completion, "mw_event_t": _capi.Event,
           "mw_world_params_t": _capi.WorldParams, "mw_event_info_t": _capi.EventInfo,
           "mw_completion_info_t": _capi.CompletionInfo, "mw_metric_info_t": _capi.MetricInfo}


@pytest.fixture(scope="module")
def header():
    program = os.environ.get("MW_PY_LAYOUT")
    assert program, "MW_PY_LAYOUT names the layout program (ctest sets it)"
    lines = subprocess.run([program], check=True, capture_output=True, text=True).stdout.split("\n")
    return {kind + " " + name: int(value) for kind, name, value in (l.split() for l in lines if l)}


def test_enum_values(header):
    values = {k.split()[1]: v for k, v in header.items() if k.startswith("value ")}
    assert set(values) == set(VALUES)
    assert {n: VALUES[n] for n in values} == values


def test_struct_layouts(header):
    for cname, cls in STRUCTS.items():
        assert ctypes.sizeof(cls) == header[f"sizeof {cname}"], cname
        for field, _ in cls._fields_:
            assert getattr(cls, field).offset == header[f"offsetof {cname}.{field}"], (cname, field)
    assert _capi.OP_STRUCT.size == header["sizeof mw_op_t"]


def test_op_packing_matches_ctypes():
    buf = ctypes.create_string_buffer(_capi.OP_STRUCT.size)
    fields = (_capi.OP_STRUCT.size, _capi.OP_REDUCE, 0x1000, 0x2000, 7, _capi.FLOAT32, 3, 5, 2**63 + 9)
    _capi.OP_STRUCT.pack_into(buf, 0, *fields)
    op = _capi.Op.from_buffer_copy(buf.raw)
    assert tuple(getattr(op, name) for name, _ in _capi.Op._fields_) == fields
