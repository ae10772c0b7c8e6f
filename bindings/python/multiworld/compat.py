"""The first name of the pymultiworld layer, kept as an alias: programs
written with `from multiworld.compat import WorldManager` run on as before.
pymultiworld programs need not change that line any more: the modules they
import, multiworld.manager, multiworld.communicator and multiworld.version,
are here (README: "pymultiworld programs")."""

from .communicator import DEFAULT_WORLD_NAME, BrokenWorldException, WorldCommunicator
from .manager import FormationStoreError, FormationTimeoutError, WorldManager
from .version import VERSION

__all__ = ["WorldManager", "WorldCommunicator", "BrokenWorldException", "DEFAULT_WORLD_NAME", "VERSION",
           "FormationTimeoutError", "FormationStoreError"]
