"""Caps on what one agent process may use, and what holds each on this machine.

- **memory** and **processes**: a cgroup of its own where the user may make one
  (cgroup v2: beside the run job's own, under a parent that hands out the memory and
  pids controllers, as systemd's user manager and a root shell do; cgroup v1: under
  the job's memory and pids cgroups); else rlimits (writable private memory per
  process, ``RLIMIT_DATA``: not the address space, which V8's WebAssembly and the JVM
  reserve by the gigabyte without using it; processes per sandbox, which the kernel
  counts per user namespace);
- **CPU seconds**: the sandbox's processes together, watched by its first process
  (and an rlimit per process as a backstop);
- **open files**: an rlimit per process;
- **output**: stdout and stderr together, counted by the run job as it reads them;
- **/tmp, HOME and the question's folder**: tmpfs sizes (:mod:`.root`), the
  question's folder also as the host stores it when it is copied out;
- **connections** and **body_mb**: the requests of the sandbox in flight at the
  gateways, and one request's body, held by its doors (:mod:`.doors`);
- **wall time**: ``timeout_s`` (the run job kills the sandbox).

A cap reached is the question's recorded error, ``agent_limit: <cap>``. The cgroup's
own counters (an OOM kill, a refused fork) say so exactly; under rlimits the first
process sees a cap reached when the sandbox is at it (processes, open files, writable
memory, a full tmpfs), sampled every :data:`WATCH_S`, and an allocation the rlimit
refused, or a file past the open-files cap, in the words of an agent that
failed (:data:`SAID`). Processes past their
cap under rlimits (which the kernel does not count for a user who is root outside)
are stopped by the first process.

Standard library only: the first process imports it too.
"""

from __future__ import annotations

import errno
import functools
import json
import os
import resource
import time
from dataclasses import asdict, dataclass

WATCH_S = 0.2
MB = 1 << 20
# How runtimes say an rlimit refused them (Python, C, C++, Java, Node, R, Go).
SAID = {
    "memory": (
        "MemoryError",
        "Cannot allocate memory",
        "std::bad_alloc",
        "java.lang.OutOfMemoryError",
        "JavaScript heap out of memory",
        "cannot allocate vector of size",
        "fatal error: runtime: out of memory",
        "out of memory",
    ),
    "open_files": ("Too many open files", "EMFILE"),
}
# The order a question's error names them in, where several were reached.
CAPS = ("output", "cpu", "memory", "processes", "open_files", "tmp", "home", "workdir")


@dataclass(frozen=True)
class Limits:
    """A method's caps (``limits:``), per question (per process in long-lived mode,
    but for CPU, output and wall time, which are per question there too)."""

    memory_mb: int = 4096
    processes: int = 256  # threads count
    cpu_s: float = 600.0
    open_files: int = 1024
    output_mb: float = 16.0
    tmp_mb: int = 512  # /tmp, /var/tmp and /dev/shm, each
    home_mb: int = 128
    workdir_mb: int = 512  # the question's folder
    connections: int = 32  # requests of the sandbox at the gateways at once (its doors)
    body_mb: float = 8.0  # one request body through a door, and at the gateways

    @classmethod
    def from_spec(cls, given: dict | None) -> Limits:
        return cls(**{k: type(getattr(cls, k))(v) for k, v in (given or {}).items()})

    def as_dict(self) -> dict:
        return asdict(self)


# -- outside: a cgroup per sandbox -----------------------------------------------------


@dataclass(frozen=True)
class Cgroups:
    """Where this machine lets the run job make a sandbox's cgroup: per controller
    (``memory``, ``pids``), the folder new cgroups go in and the hierarchy's version."""

    parents: dict  # controller -> folder
    version: int

    def make(self, name: str, limits: Limits) -> CgroupBox:
        made = {}
        for controller, parent in self.parents.items():
            folder = os.path.join(parent, name)
            try:
                os.mkdir(folder)
            except FileExistsError:
                # A name carries its process's id and count, so no sandbox of this
                # process has it: it is left from a process of this id before (killed
                # before it could remove it). Removed where empty, else the error
                # names it.
                os.rmdir(folder)
                os.mkdir(folder)
            made[controller] = folder
        box = CgroupBox(made, self.version)
        box.set(limits)
        return box

    def describe(self) -> str:
        return f"cgroup v{self.version}"


class CgroupBox:
    """One sandbox's cgroup(s): its limits, what it counted, its removal."""

    def __init__(self, folders: dict[str, str], version: int):
        self.folders, self.version = folders, version

    @property
    def procs(self) -> list[str]:
        """The files a process writes its id to, to join."""
        return sorted({os.path.join(f, "cgroup.procs") for f in self.folders.values()})

    def set(self, limits: Limits) -> None:
        memory, pids = self.folders.get("memory"), self.folders.get("pids")
        bytes_ = str(limits.memory_mb * MB)
        if memory and self.version == 2:
            _write(memory, "memory.max", bytes_)
            _write(memory, "memory.swap.max", "0", missing_ok=True)
        elif memory:
            _write(memory, "memory.limit_in_bytes", bytes_)
            _write(memory, "memory.memsw.limit_in_bytes", bytes_, missing_ok=True)
        if pids:
            _write(pids, "pids.max", str(limits.processes))

    def reached(self) -> list[str]:
        """The caps this cgroup enforced: an OOM kill (memory), a refused fork."""
        found = []
        memory, pids = self.folders.get("memory"), self.folders.get("pids")
        if memory:
            name = "memory.events" if self.version == 2 else "memory.oom_control"
            if _counter(memory, name, "oom_kill") > 0:
                found.append("memory")
        if pids and _counter(pids, "pids.events", "max") > 0:
            found.append("processes")
        return found

    def remove(self) -> None:
        for folder in self.folders.values():
            for _ in range(50):  # its processes are gone a moment after the sandbox's end
                try:
                    os.rmdir(folder)
                    break
                except FileNotFoundError:
                    break
                except OSError as exc:
                    if exc.errno != errno.EBUSY:
                        break
                    time.sleep(0.02)


@functools.cache
def cgroups() -> Cgroups | None:
    """The cgroups this run job may make (both controllers, probed by making one), or
    None where it may not (rlimits hold the caps then)."""
    if os.environ.get("HELIXBENCH_SANDBOX_CGROUPS", "").lower() in ("0", "no", "off"):
        return None
    for found in (_v2_parent(), _v1_parents()):
        if found is None:
            continue
        probe = f"helixbench-probe-{os.getpid()}"
        try:
            box = found.make(probe, Limits())
        except OSError:
            _remove_probe(found, probe)
            continue
        box.remove()
        return found
    return None


def _remove_probe(found: Cgroups, name: str) -> None:
    for parent in found.parents.values():
        try:
            os.rmdir(os.path.join(parent, name))
        except OSError:
            pass


def _v2_parent() -> Cgroups | None:
    mount = _mounts().get("cgroup2")
    own = _own_cgroups().get("")
    if mount is None or own is None:
        return None
    folder = os.path.join(mount, own.lstrip("/"))
    # A cgroup with processes hands out no controllers: new cgroups go beside the
    # job's (the root cgroup is the exception: they go in it).
    parent = folder if own == "/" else os.path.dirname(folder)
    try:
        enabled = open(os.path.join(parent, "cgroup.subtree_control")).read().split()
    except OSError:
        return None
    if not {"memory", "pids"} <= set(enabled) or not os.access(parent, os.W_OK):
        return None
    return Cgroups({"memory": parent, "pids": parent}, 2)


def _v1_parents() -> Cgroups | None:
    mounts, own = _mounts(), _own_cgroups()
    parents = {}
    for controller in ("memory", "pids"):
        if controller not in mounts or controller not in own:
            return None
        folder = os.path.join(mounts[controller], own[controller].lstrip("/"))
        if not os.access(folder, os.W_OK):
            return None
        parents[controller] = folder
    return Cgroups(parents, 1)


def _mounts() -> dict[str, str]:
    """{"cgroup2": its mount point, controller: its v1 hierarchy's mount point}."""
    found = {}
    with open("/proc/self/mountinfo", encoding="utf-8") as lines:
        for line in lines:
            fields = line.split()
            after = fields[fields.index("-") + 1 :]
            kind, options = after[0], after[2].split(",")
            if kind == "cgroup2":
                found.setdefault("cgroup2", fields[4])
            elif kind == "cgroup":
                for controller in ("memory", "pids"):
                    if controller in options:
                        found.setdefault(controller, fields[4])
    return found


def _own_cgroups() -> dict[str, str]:
    """{controller ("" for v2): this process's cgroup path}."""
    found = {}
    with open("/proc/self/cgroup", encoding="utf-8") as lines:
        for line in lines:
            _, controllers, path = line.rstrip("\n").split(":", 2)
            for controller in controllers.split(",") if controllers else [""]:
                found[controller] = path
    return found


def _write(folder: str, name: str, value: str, missing_ok: bool = False) -> None:
    try:
        with open(os.path.join(folder, name), "w") as out:
            out.write(value)
    except FileNotFoundError:
        if not missing_ok:
            raise
    except PermissionError:
        if not missing_ok:
            raise


def _counter(folder: str, name: str, key: str) -> int:
    try:
        with open(os.path.join(folder, name)) as counters:
            for line in counters:
                parts = line.split()
                if len(parts) == 2 and parts[0] == key:
                    return int(parts[1])
    except OSError:
        pass
    return 0


def held(limits: Limits, box: Cgroups | None) -> dict[str, str]:
    """What holds each cap on this machine, as the report states it."""
    cgroup = box.describe() if box else None
    return {
        "memory": cgroup or "rlimit (writable memory, per process)",
        "processes": cgroup or "rlimit (per sandbox)",
        "cpu": "watched (the sandbox's processes together)",
        "open_files": "rlimit (per process)",
        "output": "counted by the run job",
        "tmp": "tmpfs size",
        "home": "tmpfs size",
        "workdir": "tmpfs size, and counted as copied out",
        "connections": "the sandbox's doors",
        "body": "the sandbox's doors",
    }


# -- inside: rlimits, per-user counts and the watch -------------------------------------

# The kernel's per-user counts a user namespace shares with the host user (charged at
# every level up to the host's): the sandbox's own cap of each, set by its first process
# (root in its user namespace) in ``/proc/sys/user``, from the host user's limit.
USER_COUNTS = {
    "max_inotify_instances": "/proc/sys/fs/inotify/max_user_instances",
    "max_inotify_watches": "/proc/sys/fs/inotify/max_user_watches",
    "max_fanotify_groups": "/proc/sys/fs/fanotify/max_user_groups",
    "max_fanotify_marks": "/proc/sys/fs/fanotify/max_user_marks",
}
SHARE = 4  # the sandbox may take a quarter of the host user's count, leaving the rest
# Per-user rlimits (counted for the host user too): the agent's at the same share.
USER_RLIMITS = ("RLIMIT_MSGQUEUE", "RLIMIT_SIGPENDING")


def cap_user_counts() -> dict[str, int]:
    """The sandbox's caps of the per-user counts (:data:`USER_COUNTS`), each a
    :data:`SHARE` of the host user's limit; {name: cap} of those set."""
    capped = {}
    for name, host in USER_COUNTS.items():
        try:
            with open(host) as read:
                limit = int(read.read().split()[0])
            cap = max(1, limit // SHARE)
            with open(f"/proc/sys/user/{name}", "w") as write:
                write.write(str(cap))
            capped[name] = cap
        except (OSError, ValueError, IndexError):  # (a kernel without it)
            continue
    return capped


def _share_of(name: str) -> None:
    which = getattr(resource, name, None)
    if which is None:
        return
    soft, hard = resource.getrlimit(which)
    if soft == resource.RLIM_INFINITY:
        return
    cap = max(1, soft // SHARE)
    resource.setrlimit(which, (cap, min(cap, hard) if hard != resource.RLIM_INFINITY else cap))


def apply_rlimits(limits: dict, by_cgroup: bool, per_question: bool) -> None:
    """The rlimits of the agent's process (called in it before it runs the agent)."""
    files = int(limits["open_files"])
    resource.setrlimit(resource.RLIMIT_NOFILE, (files, files))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    for name in USER_RLIMITS:  # (counted against the host user's too)
        _share_of(name)
    if per_question:  # a long-lived agent's CPU is counted per question by the run job
        cpu = int(limits["cpu_s"]) + 1
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 5))
    if not by_cgroup:
        memory = int(limits["memory_mb"]) * MB  # (what it writes, not what it reserves)
        resource.setrlimit(resource.RLIMIT_DATA, (memory, memory))
        processes = int(limits["processes"])
        resource.setrlimit(resource.RLIMIT_NPROC, (processes, processes))


class Watch:
    """What the sandbox's processes use, sampled by its first process: CPU seconds
    together, and the caps it finds them at (rlimits and tmpfs sizes)."""

    def __init__(self, limits: dict, by_cgroup: bool, writable: dict[str, str]):
        self.limits, self.by_cgroup, self.writable = limits, by_cgroup, writable
        self.reached: set[str] = set()
        self.cpu_s = 0.0
        self.tick = os.sysconf("SC_CLK_TCK")

    def sample(self) -> bool:
        """Sample the sandbox's processes; True where they are past their cap and must
        be stopped."""
        cpu, tasks = resource.getrusage(resource.RUSAGE_CHILDREN), 0
        total = cpu.ru_utime + cpu.ru_stime  # those reaped, with their children
        for pid in _pids():
            stat = _read(f"/proc/{pid}/stat")
            if stat is None:
                continue
            fields = stat.rsplit(")", 1)[-1].split()
            total += sum(int(v) for v in fields[11:15]) / self.tick  # u, s, cu, cs
            tasks += int(fields[17])
            self._files(pid)
            if not self.by_cgroup:
                self._memory(pid)
        self.cpu_s = round(total, 2)
        for path, cap in self.writable.items():
            self._full(path, cap)
        if not self.by_cgroup and tasks >= int(self.limits["processes"]) - 1:
            self.reached.add("processes")
            return tasks > int(self.limits["processes"])
        return False

    def _files(self, pid: str) -> None:
        try:
            if len(os.listdir(f"/proc/{pid}/fd")) >= int(self.limits["open_files"]) - 1:
                self.reached.add("open_files")
        except OSError:
            pass

    def _memory(self, pid: str) -> None:
        for line in (_read(f"/proc/{pid}/status") or "").splitlines():
            if line.startswith("VmData:"):  # what RLIMIT_DATA counts
                data_kb = int(line.split()[1])
                if data_kb * 1024 >= 0.97 * int(self.limits["memory_mb"]) * MB:
                    self.reached.add("memory")

    def _full(self, path: str, cap: str) -> None:
        try:
            space = os.statvfs(path)
        except OSError:
            return
        size = space.f_blocks * space.f_frsize
        if space.f_bavail * space.f_frsize < max(64 << 10, size // 200):
            self.reached.add(cap)

    def status(self) -> dict:
        return {"cpu_s": self.cpu_s, "reached": sorted(self.reached)}

    def publish(self, name: str) -> None:
        """The status in ``name`` (relative to the first process's folder), replaced
        whole so that a reader never sees half of it."""
        with open(name + ".part", "w") as out:
            json.dump(self.status(), out)
        os.replace(name + ".part", name)


def said(stderr: str, by_cgroup: bool) -> list[str]:
    """The rlimits an agent that failed says it met, in its error output (memory is a
    cgroup's to count, where one holds it)."""
    caps = [c for c, words in SAID.items() if any(w in stderr for w in words)]
    return [c for c in caps if not (by_cgroup and c == "memory")]


def reap_orphans(keep: int) -> None:
    """Reap the processes left to the first process (PID 1 here) but ``keep``'s."""
    while True:
        try:
            found = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return
        if found is None or found.si_pid in (0, keep):
            return
        try:
            os.waitpid(found.si_pid, 0)
        except ChildProcessError:
            return


def _pids() -> list[str]:
    own = str(os.getpid())
    return [p for p in os.listdir("/proc") if p.isdigit() and p != own]


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return None
