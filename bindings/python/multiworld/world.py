"""World: one process group; every operation returns a Request."""

import ctypes
import enum
import operator
import sys
import threading

from . import _capi
from ._buffers import adapt, dtype_name
from .errors import ClosedError, invalid, last_error
from .request import Request, timeout_ms


class WorldState(str, enum.Enum):
    READY = "ready"
    BROKEN = "broken"
    RETIRED = "retired"  # shrunk or grown into a successor; only destroy() is left
    DESTROYED = "destroyed"


class ReduceOp(enum.IntEnum):
    SUM = _capi.REDOPS["sum"]
    PROD = _capi.REDOPS["prod"]
    MIN = _capi.REDOPS["min"]
    MAX = _capi.REDOPS["max"]
    AVG = _capi.REDOPS["avg"]


_REDOP_ALIASES = {"product": "prod", "mean": "avg", "average": "avg"}


def redop_value(op):
    """mw_redop_t of "sum"/"prod"/"min"/"max"/"avg", a ReduceOp, or a
    torch.distributed.ReduceOp of those."""
    if isinstance(op, ReduceOp):
        return int(op)
    # torch.distributed.ReduceOp.SUM and friends go by their name.
    name = op if isinstance(op, str) else getattr(getattr(op, "op", op), "name", None)
    if isinstance(name, str):
        key = _REDOP_ALIASES.get(name.lower(), name.lower())
        if key in _capi.REDOPS:
            return _capi.REDOPS[key]
    raise invalid(f"reduction op {name or op!r} is not supported: sum, prod, min, max or avg")


_OP_SIZE = _capi.OP_STRUCT.size
_pack_op = _capi.OP_STRUCT.pack_into
_c_submit = _capi.lib.submit


class World:
    """A group of `size` processes formed under `name`, this one at `rank`.
    Operations return at once with a Request. On one world, sends and
    collectives run in issue order; receives from each peer in their own
    issue order. Also a context manager: leaving it destroys the world."""

    __slots__ = ("_ctx", "_h", "_name", "_rank", "_size", "_backend", "_device", "_lock", "_broken_peer",
                 "_op", "_op_addr", "_out", "_out_addr", "__weakref__")

    def __init__(self, ctx, handle, name, rank, size, backend, device):
        self._ctx = ctx
        self._h = handle
        self._name = name
        self._rank = rank
        self._size = size
        self._backend = backend
        self._device = device
        # mw_world_destroy must not race another call with this world.
        self._lock = threading.Lock()
        self._broken_peer = -1
        self._op = ctypes.create_string_buffer(_OP_SIZE)
        self._op_addr = ctypes.addressof(self._op)
        self._out = ctypes.c_void_p()
        self._out_addr = ctypes.addressof(self._out)

    name = property(lambda self: self._name)
    rank = property(lambda self: self._rank)
    size = property(lambda self: self._size)
    backend = property(lambda self: self._backend, doc='"ucx", "gloo" or "nccl"')
    device = property(lambda self: self._device, doc="the CUDA ordinal of an NCCL world")

    @property
    def state(self):
        with self._lock:
            if self._h is None:
                return WorldState.DESTROYED
            s = _capi.lib.world_state(self._h)
        if s == _capi.WORLD_RETIRED:
            return WorldState.RETIRED
        return WorldState.READY if s == _capi.WORLD_READY else WorldState.BROKEN

    @property
    def epoch(self):
        """The incarnation number Redis gave this world (>= 1)."""
        with self._lock:
            if self._h is None:
                raise self._closed()
            return _capi.lib.world_epoch(self._h)

    def __repr__(self):
        return (f"<multiworld.World {self._name!r} rank={self._rank} size={self._size} backend={self._backend} "
                f"{self.state.value}>")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.destroy()

    def destroy(self):
        """Leaves the world (bounded time, healthy or broken). Its pending
        requests complete with CancelledError. Not collective: agree with
        the other members on the last operation before leaving."""
        with self._lock:
            h, self._h = self._h, None
            if h is not None and not self._ctx._forked:
                _capi.lib.world_destroy(h)
        if h is not None:
            self._ctx._forget_world(h)
            self._ctx._drain()  # report the requests it cancelled

    # ---- shrink and grow -------------------------------------------------------
    def shrink(self, exclude=None, abort=False, timeout=30.0):
        """The world without the members `exclude` (ranks of this world;
        None: exactly those its break named), as a new World: the same
        name, the next epoch, the survivors in their order renumbered from
        0. Every survivor calls it with the same list (a list that differs
        raises InvalidArgumentError naming both); an excluded member that
        calls it gets WorldBrokenError. abort=True (MW_SHRINK_ABORT, for a
        broken world) cancels pending requests first; without it none may
        be pending. This World is retired: its operations fail, destroy()
        frees it."""
        if exclude is None:
            ranks = []
        else:
            try:
                ranks = [operator.index(r) for r in exclude]
            except TypeError:
                raise invalid(f"exclude must be None or ranks (ints), got {exclude!r}") from None
        array = (ctypes.c_int * len(ranks))(*ranks) if ranks else None
        flags = _capi.SHRINK_ABORT if abort else _capi.SHRINK_DEFAULT
        return self._resized(lambda h, out: _capi.lib.world_shrink(h, array, len(ranks), flags, timeout_ms(timeout),
                                                                   out))

    def grow(self, new_size, timeout=30.0):
        """This world with `new_size` members, as a new World: every member
        calls it, keeping its rank, and each newcomer calls
        Context.create_world with the world's name, new_size and a rank from
        this size up. A newcomer that does not come in `timeout` seconds
        raises TimeoutError, and this world runs on. Otherwise this World
        is retired, as by shrink()."""
        try:
            size = operator.index(new_size)
        except TypeError:
            raise invalid(f"new_size must be an int, got {new_size!r}") from None
        return self._resized(lambda h, out: _capi.lib.world_grow(h, size, timeout_ms(timeout), out))

    def _resized(self, call):
        out = ctypes.c_void_p()
        self._ctx._enter()
        try:
            with self._lock:
                if self._h is None:
                    raise self._closed()
                h = self._h
            status = call(h, ctypes.byref(out))
            if status != _capi.OK:
                raise last_error(status)
            lib = _capi.lib
            world = World(self._ctx, out.value, self._name, lib.world_rank(out.value), lib.world_size(out.value),
                          self._backend, self._device)
            self._ctx._worlds[out.value] = world
            return world
        finally:
            self._ctx._leave()

    # ---- point to point --------------------------------------------------------
    def send(self, tensor, dst):
        b = self._buffer(tensor, "send: tensor", False)
        return self._submit(_capi.OP_SEND, b.ptr, 0, b.count, b.dtype, 0, dst, b.obj, None, b)

    def recv(self, tensor, src):
        b = self._buffer(tensor, "recv: tensor", True)
        return self._submit(_capi.OP_RECV, 0, b.ptr, b.count, b.dtype, 0, src, b.obj, tensor, b)

    # ---- collectives -----------------------------------------------------------
    def broadcast(self, tensor, root=0):
        """In place: root's tensor into everyone's."""
        b = self._buffer(tensor, "broadcast: tensor", True)
        return self._submit(_capi.OP_BROADCAST, 0, b.ptr, b.count, b.dtype, 0, root, b.obj, tensor, b)

    def all_reduce(self, tensor, op="sum"):
        """In place."""
        b = self._buffer(tensor, "all_reduce: tensor", True)
        return self._submit(_capi.OP_ALLREDUCE, b.ptr, b.ptr, b.count, b.dtype, redop_value(op), 0, b.obj,
                            tensor, b)

    def reduce(self, tensor, root=0, op="sum"):
        """In place: the result lands in root's tensor; the others' stay."""
        b = self._buffer(tensor, "reduce: tensor", True)
        return self._submit(_capi.OP_REDUCE, b.ptr, b.ptr, b.count, b.dtype, redop_value(op), root, b.obj,
                            tensor, b)

    def all_gather(self, output, input):
        """output holds size * input.numel() elements, rank-major."""
        i = self._buffer(input, "all_gather: input", False)
        o = self._buffer(output, "all_gather: output", True)
        self._check_pair("all_gather", o, i, self._size, 1)
        return self._submit(_capi.OP_ALLGATHER, i.ptr, o.ptr, i.count, i.dtype, 0, 0, (i.obj, o.obj), output, o)

    def gather(self, output, input, root=0):
        """root's output holds size * input.numel() elements, rank-major;
        output is not used (may be None) on the other ranks."""
        i = self._buffer(input, "gather: input", False)
        o = None
        if output is None and root == self._rank:
            raise invalid(f"gather: this rank is the root ({root}) and needs an output tensor")
        if output is not None:
            o = self._buffer(output, "gather: output", True)
            self._check_pair("gather", o, i, self._size, 1)
        return self._submit(_capi.OP_GATHER, i.ptr, o.ptr if o else 0, i.count, i.dtype, 0, root,
                            (i.obj, o and o.obj), output, i)

    def scatter(self, output, input=None, root=0):
        """root's input holds size * output.numel() elements; block j goes
        to rank j. input is not used (may be None) on the other ranks."""
        o = self._buffer(output, "scatter: output", True)
        i = None
        if input is None and root == self._rank:
            raise invalid(f"scatter: this rank is the root ({root}) and needs an input tensor")
        if input is not None:
            i = self._buffer(input, "scatter: input", False)
            self._check_pair("scatter", o, i, 1, self._size)
        return self._submit(_capi.OP_SCATTER, i.ptr if i else 0, o.ptr, o.count, o.dtype, 0, root,
                            (i and i.obj, o.obj), output, o)

    def reduce_scatter(self, output, input, op="sum"):
        """input holds size * output.numel() elements; this rank gets the
        reduced block `rank`."""
        i = self._buffer(input, "reduce_scatter: input", False)
        o = self._buffer(output, "reduce_scatter: output", True)
        self._check_pair("reduce_scatter", o, i, 1, self._size)
        return self._submit(_capi.OP_REDUCE_SCATTER, i.ptr, o.ptr, o.count, o.dtype, redop_value(op), 0,
                            (i.obj, o.obj), output, o)

    def all_to_all(self, output, input):
        """Both hold size blocks of equal length; block j of input goes to
        rank j, block j of output comes from rank j."""
        i = self._buffer(input, "all_to_all: input", False)
        o = self._buffer(output, "all_to_all: output", True)
        self._check_pair("all_to_all", o, i, 1, 1)
        if i.count % self._size:
            raise invalid(f"all_to_all: {i.count} elements do not split into {self._size} equal blocks")
        return self._submit(_capi.OP_ALLTOALL, i.ptr, o.ptr, i.count // self._size, i.dtype, 0, 0,
                            (i.obj, o.obj), output, o)

    def barrier(self):
        return self._submit(_capi.OP_BARRIER, 0, 0, 0, _capi.UINT8, 0, 0, None, None, None)

    # ---- internals -------------------------------------------------------------
    def _closed(self):
        if self._ctx._handle is None:
            return self._ctx._closed_error()
        return ClosedError(f"world '{self._name}' was destroyed")

    def _buffer(self, obj, what, writable):
        b = adapt(obj, what, writable)
        if self._backend == "nccl":
            if b.device is None:
                raise invalid(f"{what}: a host tensor on NCCL world '{self._name}'; use a CUDA tensor on "
                              f"cuda:{self._device}")
            if b.device != self._device:
                raise invalid(f"{what}: tensor on cuda:{b.device}, NCCL world '{self._name}' is on "
                              f"cuda:{self._device}")
        elif b.device is not None:
            raise invalid(f"{what}: a CUDA tensor (cuda:{b.device}) on host world '{self._name}' "
                          f"({self._backend}); move it with .cpu() or use an NCCL world")
        return b

    def _check_pair(self, op, out, inp, mul_out, mul_in):
        """out.count * mul_in must equal inp.count * mul_out, with one dtype."""
        if out.dtype != inp.dtype:
            raise invalid(f"{op}: output is {dtype_name(out.dtype)} but input is {dtype_name(inp.dtype)}")
        if out.count * mul_in != inp.count * mul_out:
            need = ("the input's" if mul_out == mul_in else
                    f"{mul_out} (world size) times the input's" if mul_out > 1 else
                    f"the input's divided by {mul_in} (world size)")
            raise invalid(f"{op}: output has {out.count} elements and input {inp.count}; the output needs "
                          f"{need}")

    def _submit(self, kind, send, recv, count, dtype, redop, peer, keep, result, buf):
        if buf is not None and buf.device is not None:
            # The library's stream must see what torch's current stream wrote.
            sys.modules["torch"].cuda.current_stream(buf.device).synchronize()
        ctx = self._ctx
        key = next(ctx._keys)
        req = Request(ctx, self, key, keep, result)
        # Registered before the library sees it: its completion may be
        # polled on another thread before mw_submit returns here.
        ctx._pending[key] = req
        with self._lock:
            h = self._h
            if h is not None:
                _pack_op(self._op, 0, _OP_SIZE, kind, send, recv, count, dtype, redop, peer, key)
                status = _c_submit(h, self._op_addr, self._out_addr)
                if status == _capi.OK:
                    req._handle = ctx._handles[key] = self._out.value
                    return req
                err = last_error(status)
        del ctx._pending[key]
        req._ctx = None  # nothing to free
        raise err if h is not None else self._closed()
