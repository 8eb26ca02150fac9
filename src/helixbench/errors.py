"""Errors a user acts on: the message names the config key or file to fix.

Kept apart from the modules that raise them so that the command line, which
reports them without a traceback, stays cheap to import in every workflow job.
"""


class ConfigError(ValueError):
    """A config value that the schema admits but that does not make sense; names the key."""


class DataError(ValueError):
    """A file that cannot be read as what it should be; names the file (and line)."""
