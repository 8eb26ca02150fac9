"""Errors a user acts on: the message names the config key or file to fix.

Kept apart from the modules that raise them so that the command line, which
reports them without a traceback, stays cheap to import in every workflow job.
"""


class ConfigError(ValueError):
    """A config value that the schema admits but that does not make sense; names the key."""


class DataError(ValueError):
    """A file that cannot be read as what it should be; names the file (and line)."""


def closest(word, known) -> str | None:
    """The known name closest to ``word`` (a likely typo of it), else None."""
    import difflib

    if not isinstance(word, str):
        return None
    close = difflib.get_close_matches(word, [str(k) for k in known], n=1, cutoff=0.6)
    return close[0] if close else None


def unknown_name(what: str, name, known) -> str:
    """``unknown <what> 'name'; did you mean 'x'? known: a, b, c`` for any lookup of a
    name a user typed: the closest known name first, then all of them."""
    known = [str(k) for k in known]
    guess = closest(name, known)
    hint = f"; did you mean {guess!r}?" if guess else ";"
    return f"unknown {what} {name!r}{hint} known: {', '.join(known) or '(none)'}"
