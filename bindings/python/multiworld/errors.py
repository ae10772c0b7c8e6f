"""Exceptions: one class per mw_status_t, under multiworld.Error."""

import builtins

from . import _capi


class Error(Exception):
    """A failed multiworld call. `status` is the mw_status_t value (an int),
    `message` the library's explanation."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status
        self.message = message

    @property
    def status_name(self):
        return _capi.lib.status_name(self.status)


class InvalidArgumentError(Error, ValueError):
    """A bad value from the caller: a name, a rank, a tensor's dtype,
    layout, device or size."""


class NotFoundError(Error):
    pass


class AlreadyExistsError(Error):
    """E.g. a rank of a world claimed by another live process."""


class TimeoutError(Error, builtins.TimeoutError):
    """A wait or a world's formation ran out of time."""


class WorldBrokenError(Error):
    """A member of the world failed; the world is unusable. `world` is its
    name, `peer_rank` the member blamed (-1 when unknown)."""

    def __init__(self, status, message, world=None, peer_rank=-1):
        super().__init__(status, message)
        self.world = world
        self.peer_rank = peer_rank


class StoreError(Error, ConnectionError):
    """Redis is unreachable or answered something unusable."""


class BackendError(Error):
    pass


class UnsupportedError(Error):
    """E.g. a backend not built in or not usable on this machine."""


class CancelledError(Error):
    """The request was taken back, or its world was destroyed."""


class InternalError(Error):
    pass


class NoMemoryError(Error, MemoryError):
    pass


class ClosedError(InvalidArgumentError):
    """The context (or the world) was closed."""

    def __init__(self, message):
        super().__init__(_capi.ERR_INVALID_ARGUMENT, message)


_BY_STATUS = {
    _capi.ERR_INVALID_ARGUMENT: InvalidArgumentError,
    _capi.ERR_NOT_FOUND: NotFoundError,
    _capi.ERR_ALREADY_EXISTS: AlreadyExistsError,
    _capi.ERR_TIMEOUT: TimeoutError,
    _capi.ERR_WORLD_BROKEN: WorldBrokenError,
    _capi.ERR_STORE: StoreError,
    _capi.ERR_BACKEND: BackendError,
    _capi.ERR_UNSUPPORTED: UnsupportedError,
    _capi.ERR_CANCELLED: CancelledError,
    _capi.ERR_INTERNAL: InternalError,
    _capi.ERR_NO_MEMORY: NoMemoryError,
}


def error_for(status, message):
    """The exception for a failed status."""
    return _BY_STATUS.get(status, Error)(status, message)


def invalid(message):
    return InvalidArgumentError(_capi.ERR_INVALID_ARGUMENT, message)


def last_error(status):
    """The exception for `status`, with this thread's mw_last_error()."""
    return error_for(status, _capi.lib.error_message())


def check(status):
    """Raises for a failed status of the call just made on this thread."""
    if status != _capi.OK:
        raise last_error(status)
