"""pymultiworld's environment knob, M8D_LOG_LEVEL, for the modules that
pymultiworld programs import (multiworld.manager, multiworld.communicator).

pymultiworld configures Python's root logger when it is imported: level
$M8D_LOG_LEVEL (default WARNING), records to stdout. Its programs count on
that (their own logging calls print at that level), so importing those
modules here does the same. The level also sets the library's `log_level`
(stderr), so M8D_LOG_LEVEL=DEBUG shows what the library decided as well.
"""

import logging
import os
import sys
import warnings

# Python's level names to the library's log_level values.
_LIBRARY_LEVELS = {
    "CRITICAL": "error", "FATAL": "error", "ERROR": "error", "WARNING": "warn", "WARN": "warn", "INFO": "info",
    "DEBUG": "debug", "NOTSET": "debug",
}
_FORMAT = "%(asctime)s | %(filename)s:%(lineno)d | %(levelname)s | %(threadName)s | %(funcName)s | %(message)s"


def level_name(warn=False):
    """$M8D_LOG_LEVEL as a level name, None when unset or unknown.
    pymultiworld fails at import on a name logging does not know; a warning
    (at import only) is kinder."""
    raw = os.environ.get("M8D_LOG_LEVEL")
    if raw is None:
        return None
    name = raw.strip().upper()
    if name not in _LIBRARY_LEVELS:
        if warn:
            warnings.warn(f"M8D_LOG_LEVEL={raw!r} is not a logging level (DEBUG, INFO, WARNING, ERROR, CRITICAL); "
                          "using WARNING", stacklevel=3)
        return None
    return name


def configure_logging():
    """The root logger as pymultiworld sets it up; a no-op when the program
    configured logging already (logging.basicConfig's own rule)."""
    name = level_name(warn=True) or "WARNING"
    logging.basicConfig(level=getattr(logging, name), format=_FORMAT, handlers=[logging.StreamHandler(sys.stdout)])


def library_config(config):
    """`config` for multiworld.Context with log_level from M8D_LOG_LEVEL,
    unless the caller chose one."""
    name = level_name()
    if name is None or "log_level" in config:
        return config
    return dict(config, log_level=_LIBRARY_LEVELS[name])
