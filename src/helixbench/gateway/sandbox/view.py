"""What an agent may read: the paths its method names (its code, its runtime, its
``paths:``, the upstream files an original reads), never a benchmark's files.

The new root (:mod:`.root`) binds these read-only at their own paths. A path that
holds, or lies in, what the run is judged by (the question bank, the upstream copies,
the mirror, the caches, ``results/``) is refused with the reason: an agent that can
read the answer key cannot be ranked.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from ... import paths
from ...errors import ConfigError
from .root import under

# Where the workflow keeps what a run is judged by, below its working directory.
JUDGED = {
    paths.UPSTREAM_DIR: "the upstream copies (the benchmarks' files)",
    str(Path(paths.QUESTIONS).parent): "the question bank",
    str(Path(paths.TOOL_CACHE).parent): "the tool and model caches",
    "resources/snapshots": "the demonstrations' snapshots",
    "results": "the runs' records and scores",
}


def judged_places(extra: dict[str, str] | None = None) -> dict[str, str]:
    """{absolute path: what it holds} of every place an agent may not read: the
    workflow's (:data:`JUDGED`), the mirror (``HELIXBENCH_MIRROR``) and ``extra``
    (a config's own cache paths)."""
    places = {_absolute(p): why for p, why in JUDGED.items()}
    mirror = os.environ.get("HELIXBENCH_MIRROR")
    if mirror:
        places[_absolute(mirror)] = "the mirror of upstream files (the benchmarks' files)"
    for path, why in (extra or {}).items():
        places[_absolute(path)] = why
    return places


def refusal(path: str, places: dict[str, str]) -> str | None:
    """Why an agent may not read ``path`` (it holds or lies in a judged place), or None."""
    own = _absolute(path)
    for place, why in places.items():
        if under(own, place):
            return f"{path} lies in {why}"
        if under(place, own):
            return f"{path} holds {why} ({os.path.relpath(place, own)})"
    return None


def check_paths(where: str, given, places: dict[str, str]) -> None:
    """A config's ``paths:`` entries, each checked; the first refused is the error."""
    for entry in given or []:
        reason = refusal(str(entry), places)
        if reason:
            raise ConfigError(
                f"{where}: {reason}; an agent may not read what its runs are judged by"
            )


def visible_paths(
    python: str, argv, env_values, own: Path, allowed_files, given, agent_path: str
) -> list[str]:
    """The paths the agent reads besides the system's: its interpreter (a venv: the
    venv and the Python it was made from), the program ``argv`` runs, the absolute
    paths ``argv`` and ``env_values`` name, ``given`` (``paths:``) and
    ``allowed_files`` (upstream files an original reads). A named path in a judged
    place is refused (ConfigError), except the folders of ``allowed_files``, of
    which only those files are shown."""
    places = judged_places()
    allowed = [_absolute(f) for f in allowed_files]
    found = [*allowed, *runtime(python)]
    program = argv[0] if argv else ""
    if program and not os.path.isabs(program):
        program = shutil.which(program, path=agent_path) or ""
    named = [python, program, *argv, *env_values, *(given or [])]
    for value in named:
        for part in str(value).split(os.pathsep):
            path = Path(part)
            if not path.is_absolute() or not path.exists() or path.is_relative_to(own):
                continue
            if any(under(a, _absolute(part)) for a in allowed):
                continue  # an original's upstream folder: its own files only
            reason = refusal(part, places)
            if reason:
                raise ConfigError(f"the agent names {reason}; an agent may not read it")
            found.append(str(path))
            if path.is_symlink() or path.is_file():
                found += runtime(str(path)) if path.name.startswith("python") else []
                found.append(str(path.resolve()))  # where a link points (a venv's python)
    return sorted(set(found))


def runtime(python: str) -> list[str]:
    """What an interpreter needs: its venv (where it is one) and the installation the
    venv was made from."""
    path = Path(python)
    if not path.is_absolute() or not path.exists():
        return []
    found = []
    venv = path.parent.parent
    config = venv / "pyvenv.cfg"
    if path.parent.name == "bin" and config.exists():
        found.append(str(venv))
        for line in config.read_text().splitlines():
            key, _, value = line.partition("=")
            if key.strip() == "home":  # the base installation's bin folder
                found.append(str(Path(value.strip()).parent))
    real = path.resolve()
    if real.parent.name == "bin":
        found.append(str(real.parent.parent))
    return [p for p in found if p not in ("/", "/usr", "/usr/local")]


def _absolute(path: str) -> str:
    return os.path.realpath(os.path.abspath(os.path.expanduser(str(path))))


# How runtimes say a file they looked for is not there (Python, Node, Perl, Ruby, Java,
# a shell).
MISSING = (
    "ModuleNotFoundError", "No module named", "No such file or directory",
    "Cannot find module", "Can't locate", "cannot load such file",
    "Could not find or load main class",
)  # fmt: skip


def hidden_folders(argv, visible) -> list[str]:
    """The folders of the files ``argv`` names that the sandbox does not show (it shows
    a named file alone), where they hold other files: an agent that imports one of
    those meets a missing file."""
    shown = [os.path.normpath(str(p)) for p in visible]
    found = []
    for value in argv:
        path = Path(str(value))
        if not path.is_absolute() or not path.is_file() or path.parent.as_posix() == "/":
            continue
        folder = os.path.normpath(str(path.parent))
        if any(under(folder, s) for s in shown) or folder in found:
            continue
        if any(other.name != path.name for other in path.parent.iterdir()):
            found.append(folder)
    return found


def missing_file_hint(stderr: str, folders: list[str]) -> str | None:
    """What to tell a user whose agent failed looking for a file (``stderr`` says so)
    that lies in a folder its sandbox does not show; None otherwise."""
    if not folders or not any(word in stderr for word in MISSING):
        return None
    return (
        f"the sandbox shows the program's file alone, not the folder beside it "
        f"({', '.join(folders)}): name the folder in the method's `paths:` for the files "
        "it imports or reads there"
    )
