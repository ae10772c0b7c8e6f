"""pymultiworld's `multiworld.version`.

VERSION names the pymultiworld release whose API `multiworld.manager` and
`multiworld.communicator` follow, so a program that checks it sees the API
it was written for. This package's own version (the library's) is
`multiworld.__version__`.
"""

VERSION = "0.2.3"
