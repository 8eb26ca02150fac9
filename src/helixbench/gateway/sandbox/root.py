"""The agent's file system: a new, empty root (``pivot_root``) that holds only what
the agent needs, built by the sandbox's first process in its own mount namespace.

- **read-only**: the system's program and library folders (:data:`SYSTEM_DIRS`,
  ``/bin`` and the like as the host has them: folders or links), the few entries of
  ``/etc`` programs read (:data:`ETC_KEPT`), and the paths the method names (the
  agent's code and runtime, ``paths:``), each at its own path;
- **written here**, in ``/etc``: ``passwd`` and ``group`` (one user, the agent),
  ``hosts``, ``resolv.conf``, ``nsswitch.conf``, ``hostname`` and the certificate
  bundles, which hold only the run's own authority;
- **writable**, each a tmpfs of its own size: ``/tmp``, ``/var/tmp``, ``/dev/shm``,
  ``HOME`` (:data:`HOME`, empty) and the question's folder, whose files are copied in
  before the agent starts and out when it ends, within the same cap as the host
  stores them (sparse files' holes and hard links count in full: :class:`Budget`);
- **fresh**: ``/proc`` (read-only), ``/sys`` (read-only), a ``/dev`` of a few devices,
  ``/run`` (the sandbox's own files).

Nothing else: not the user's home, the project, its resources and results, the
mirror, the caches or other jobs' folders. Standard library only.
"""

from __future__ import annotations

import ctypes
import errno
import glob
import os
import stat

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_NOATIME, MS_NODIRATIME, MS_BIND, MS_REC = 32, 1024, 2048, 4096, 16384
MS_RELATIME = 1 << 21
MNT_DETACH = 2
# statvfs flags -> mount flags: a remount inside a user namespace must keep them.
KEPT_FLAGS = {
    os.ST_NOSUID: MS_NOSUID,
    os.ST_NODEV: MS_NODEV,
    os.ST_NOEXEC: MS_NOEXEC,
    os.ST_NOATIME: MS_NOATIME,
    os.ST_NODIRATIME: MS_NODIRATIME,
    os.ST_RELATIME: MS_RELATIME,
}
STAGE = "/tmp"  # where the new root is put together (a tmpfs mounted over it, here only)
HOME = "/home/agent"
OWN_DIR = "/run/helixbench"  # the sandbox's own files (its CA), read-only
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# /etc entries programs read that hold no secret: the dynamic loader's cache,
# alternatives (Debian's /usr/bin/java is a link through it), locale and time zone,
# the services and MIME tables, and runtimes' own settings (Java's security files,
# Perl's and R's configuration, Python's). Not passwd, shadow, ssh, ssl/private,
# pip.conf, npmrc or gitconfig (which may hold credentials).
ETC_KEPT = (
    "alternatives",
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "localtime",
    "timezone",
    "locale.alias",
    "locale.conf",
    "services",
    "protocols",
    "host.conf",
    "gai.conf",
    "networks",
    "ethertypes",
    "mime.types",
    "magic",
    "magic.mime",
    "java-*",
    "perl",
    "R",
    "python3",
    "python3.*",
    "fonts",
    "terminfo",
    "inputrc",
    "bash.bashrc",
    "profile",
    "shells",
    "os-release",
    "debian_version",
    "lsb-release",
    "ssl/openssl.cnf",
)
# The certificate bundles OpenSSL, GnuTLS and Java read, replaced by the run's own.
SYSTEM_BUNDLES = (
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/ssl/cert.pem",
    "/etc/ssl/ca-bundle.pem",
)
JAVA_STORES = ("/etc/ssl/certs/java/cacerts", "/etc/pki/java/cacerts")
# The device nodes a program expects; no disk, no other device (a run as root would
# otherwise keep root's access to them: ownership, not capabilities, decides).
DEVICES = ("null", "zero", "full", "random", "urandom", "tty")
PASSWD = f"agent:x:0:0:helixbench agent:{HOME}:/bin/sh\nnobody:x:65534:65534::/:/bin/false\n"
GROUP = "agent:x:0:\nnogroup:x:65534:\n"
NSSWITCH = "passwd: files\ngroup: files\nshadow: files\nhosts: files dns\n"
HOSTNAME = "sandbox"
_libc = ctypes.CDLL(None, use_errno=True)


class Root:
    """The new root of one agent: built by :meth:`build` (before the agent starts),
    then :meth:`copy_out` (the question's folder back where the run job reads it)."""

    def __init__(self, spec: dict, sizes_mb: dict):
        self.spec = spec
        self.sizes_mb = sizes_mb  # tmp_mb, home_mb, workdir_mb
        self.question_dir = spec["question_dir"]
        # The question's folder on the host, opened before anything hides it.
        self._question_fd = os.open(self.question_dir, os.O_RDONLY | os.O_DIRECTORY)

    @property
    def writable(self) -> dict[str, str]:
        """{path inside: the cap that bounds it} of every writable tmpfs."""
        tmp = {p: "tmp" for p in ("/tmp", "/var/tmp", "/dev/shm")}
        return tmp | {HOME: "home", self.question_dir: "workdir"}

    def build(self, etc: dict[str, bytes]) -> None:
        """Put the new root together and move into it; ``etc`` maps absolute paths to
        the bytes written there (hosts, resolver, bundles)."""
        shown = [(p, os.open(p, os.O_PATH)) for p in _top_most(self.spec["visible"])]
        system = {d: os.open(d, os.O_PATH) for d in SYSTEM_DIRS if os.path.lexists(d)}
        kept = {p: os.open(p, os.O_PATH) for p in _etc_kept()}
        devices = {n: os.open(f"/dev/{n}", os.O_PATH) for n in DEVICES if _exists(f"/dev/{n}")}
        sys_fd = os.open("/sys", os.O_PATH) if os.path.isdir("/sys") else None
        new = STAGE
        _mount("tmpfs", new, "tmpfs", MS_NOSUID | MS_NODEV, "mode=755,size=16m")
        for folder in ("etc", "proc", "sys", "dev", "run", "tmp", "var/tmp", HOME[1:]):
            os.makedirs(os.path.join(new, folder), mode=0o755, exist_ok=True)
        for path, fd in system.items():
            target = new + path
            if os.path.islink(f"/proc/self/fd/{fd}") and os.path.islink(path):
                os.symlink(os.readlink(path), target)  # /bin -> usr/bin, as the host has it
            else:
                _bind(fd, target)
        self._etc(new, kept, etc)
        _mount("proc", new + "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
        self._sys(new, sys_fd)
        self._dev(new, devices)
        _mount("tmpfs", new + "/run", "tmpfs", MS_NOSUID | MS_NODEV, "mode=755,size=4m")
        for path, cap in self.writable.items():
            if cap != "workdir" and path != "/dev/shm":  # (/dev's own, made with it)
                mode = "700" if path == HOME else "1777"
                size = f"size={self.sizes_mb[cap + '_mb']}m"
                os.makedirs(new + path, exist_ok=True)
                _mount("tmpfs", new + path, "tmpfs", MS_NOSUID | MS_NODEV, f"mode={mode},{size}")
        for path, fd in sorted(shown):
            _bind(fd, new + path)
        target = new + self.question_dir
        os.makedirs(target, exist_ok=True)
        size = f"size={self.sizes_mb['workdir_mb']}m"
        _mount("tmpfs", target, "tmpfs", MS_NOSUID | MS_NODEV, f"mode=700,{size}")
        copy_tree(os.dup(self._question_fd), _open_dir(target))
        writable = {new + p for p in self.writable} | {new + "/run"}
        for point in _mount_points():  # everything else read-only, the root itself last
            if under(point, new) and point not in writable and point != new:
                _read_only(point)
        for fd in [*system.values(), *kept.values(), *devices.values(), *(f for _, f in shown)]:
            os.close(fd)
        _pivot(new)
        _read_only("/")

    def seal_run(self) -> None:
        """``/run`` read-only, once the sandbox's own files are written there."""
        _read_only("/run")

    def _etc(self, new: str, kept: dict[str, int], etc: dict[str, bytes]) -> None:
        for path, fd in kept.items():
            target = new + path
            os.makedirs(os.path.dirname(target), exist_ok=True)
            if os.path.islink(path):  # /etc/localtime -> the zone's file, in /usr
                os.symlink(os.readlink(path), target)
            else:
                _bind(fd, target)
        written = {
            "/etc/passwd": PASSWD.encode(),
            "/etc/group": GROUP.encode(),
            "/etc/nsswitch.conf": NSSWITCH.encode(),
            "/etc/hostname": f"{HOSTNAME}\n".encode(),
        }
        for path, data in (written | etc).items():  # all of them in /etc
            target = new + path
            os.makedirs(os.path.dirname(target), exist_ok=True)
            if os.path.lexists(target):
                os.unlink(target)
            _write(target, data)

    def _sys(self, new: str, sys_fd: int | None) -> None:
        flags = MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC
        try:  # a fresh sysfs: the network namespace's own, without the host's cgroups
            _mount("sysfs", new + "/sys", "sysfs", flags)
        except OSError:
            if sys_fd is not None:  # where the kernel refuses a new one: the host's
                _bind(sys_fd, new + "/sys")
        if sys_fd is not None:
            os.close(sys_fd)

    def _dev(self, new: str, devices: dict[str, int]) -> None:
        dev = new + "/dev"
        _mount("tmpfs", dev, "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=755,size=64k")
        for name, fd in devices.items():
            open(f"{dev}/{name}", "a").close()
            _mount(f"/proc/self/fd/{fd}", f"{dev}/{name}", None, MS_BIND)
        for number, name in enumerate(("stdin", "stdout", "stderr")):
            os.symlink(f"/proc/self/fd/{number}", f"{dev}/{name}")
        os.symlink("/proc/self/fd", f"{dev}/fd")
        os.mkdir(f"{dev}/pts")
        try:  # pseudo-terminals of its own (Python's pty, expect)
            _mount("devpts", f"{dev}/pts", "devpts", MS_NOSUID | MS_NOEXEC, "newinstance,mode=620")
            os.symlink("pts/ptmx", f"{dev}/ptmx")
        except OSError:
            pass
        os.mkdir(f"{dev}/shm")
        size = f"size={self.sizes_mb['tmp_mb']}m"
        _mount("tmpfs", f"{dev}/shm", "tmpfs", MS_NOSUID | MS_NODEV, f"mode=1777,{size}")

    def copy_out(self, refused: list | None = None) -> bool:
        """The question's folder as the agent left it, back in the host's folder (its
        files and folders; links and devices left out), up to the folder's cap as the
        host stores it (:class:`Budget`); False where the cap stopped the copy.
        ``refused``: (path, why) of each entry that changed kind, vanished or appeared
        while it was copied, left out."""
        target = self._question_fd
        for entry in os.listdir(target):
            _remove(target, entry)
        budget = Budget(self.sizes_mb["workdir_mb"] << 20)
        try:
            copy_tree(_open_dir(self.question_dir), target, budget, refused)
        except Budget.Spent:
            return False
        return True


class Budget:
    """What a copy may write, counted as the host stores it: each file its whole size
    (a sparse file's holes are written out in full, each hard link is a file of its own)
    in blocks, each folder and empty file a block; :class:`Spent` past it."""

    BLOCK = 4096

    class Spent(Exception):
        pass

    def __init__(self, size: int):
        self.left = size

    def take(self, size: int) -> None:
        blocks = max(1, -(-size // self.BLOCK))
        if blocks * self.BLOCK > self.left:
            raise Budget.Spent()
        self.left -= blocks * self.BLOCK


# The copy-out's refusals recorded one by one under the question; past these, a count.
MAX_COPY_REFUSALS = 20


class Changed(OSError):
    """An entry that is not what it was when the copy listed it."""


def copy_tree(
    source: int,
    target: int,
    budget: Budget | None = None,
    refused: list | None = None,
    at: str = "",
) -> None:
    """Regular files and folders of the folder ``source`` into ``target`` (both open
    folders, closed after), never following a link; ``budget``: Budget.Spent at the
    first entry past it (what was copied stays). An entry that changed kind, vanished
    or appeared meanwhile, and one that is neither file nor folder (a link, a pipe), is
    left out, and (``refused``) its path and why kept."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
    try:
        with os.scandir(source) as entries:
            for entry in entries:
                where = f"{at}/{entry.name}" if at else entry.name
                try:
                    if entry.is_dir(follow_symlinks=False):
                        if budget is not None:
                            budget.take(0)
                        inner = os.open(entry.name, flags, dir_fd=source)
                        try:
                            os.mkdir(entry.name, 0o700, dir_fd=target)
                            mine = os.open(entry.name, flags, dir_fd=target)
                        except OSError:
                            os.close(inner)
                            raise
                        copy_tree(inner, mine, budget, refused, where)
                    elif entry.is_file(follow_symlinks=False):
                        _copy_file(source, target, entry.name, budget)
                    elif refused is not None and len(refused) <= 10 * MAX_COPY_REFUSALS:
                        kind = "a link (never followed)" if entry.is_symlink() else "no file"
                        refused.append((where, f"{kind}: left out"))
                except Budget.Spent:
                    raise
                except OSError as exc:  # (the walk goes on: the entry is refused, said)
                    if refused is not None and len(refused) <= 10 * MAX_COPY_REFUSALS:
                        refused.append((where, _why(exc)))
    finally:
        os.close(source)
        os.close(target)


def _why(exc: OSError) -> str:
    """Why an entry was not copied, in words (no host path: the entry's own is said)."""
    if isinstance(exc, Changed):
        return str(exc.strerror)
    kinds = {
        errno.ENOENT: "it vanished while it was copied",
        errno.ENOTDIR: "it was a folder, then not (changed kind while it was copied)",
        errno.ELOOP: "it became a link while it was copied (links are never followed)",
        errno.EEXIST: "it appeared twice while it was copied",
    }
    return kinds.get(
        exc.errno, f"it could not be read ({errno.errorcode.get(exc.errno, exc.errno)})"
    )


def _copy_file(source: int, target: int, name: str, budget: Budget | None) -> None:
    read = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=source)
    try:
        info = os.fstat(read)
        if not stat.S_ISREG(info.st_mode):  # swapped for something else since it was listed
            raise Changed(errno.EINVAL, "it was a file, then not (changed kind while copied)")
        if budget is not None:
            budget.take(info.st_size)
        mode = stat.S_IMODE(info.st_mode) & 0o755
        write = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode, dir_fd=target)
        try:
            left = info.st_size  # what was counted, though a process still writes to it
            while left > 0 and (chunk := os.read(read, min(left, 1 << 20))):
                os.write(write, chunk)
                left -= len(chunk)
        finally:
            os.close(write)
    finally:
        os.close(read)


def _remove(folder: int, name: str) -> None:
    info = os.stat(name, dir_fd=folder, follow_symlinks=False)
    if stat.S_ISDIR(info.st_mode):
        inner = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=folder)
        try:
            for entry in os.listdir(inner):
                _remove(inner, entry)
        finally:
            os.close(inner)
        os.rmdir(name, dir_fd=folder)
    else:
        os.unlink(name, dir_fd=folder)


def _etc_kept() -> list[str]:
    found = []
    for pattern in ETC_KEPT:
        found += sorted(p for p in glob.glob(os.path.join("/etc", pattern)) if os.path.lexists(p))
    return found


def _top_most(paths) -> list[str]:
    """The existing ``paths`` that are not inside another of them, a system folder
    (bound whole already) or a folder made fresh here."""
    kept: list[str] = []
    for path in sorted(os.path.normpath(p) for p in paths if _exists(p)):
        covered = [*kept, *SYSTEM_DIRS, "/proc", "/sys", "/dev", "/run"]
        if not any(under(path, k) for k in covered) and path != "/":
            kept.append(path)
    return kept


# pivot_root has no wrapper in glibc; its number by machine.
PIVOT_ROOT = {"x86_64": 155, "aarch64": 41, "riscv64": 41, "ppc64le": 203, "s390x": 217}


def _pivot(new: str) -> None:
    os.chdir(new)
    os.mkdir(".old")
    number = PIVOT_ROOT.get(os.uname().machine)
    if number is None or _libc.syscall(number, b".", b".old") != 0:
        error = ctypes.get_errno() if number else 38  # ENOSYS
        raise OSError(error, f"pivot_root: {os.strerror(error)}")
    os.chdir("/")
    if _libc.umount2(b"/.old", MNT_DETACH) != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"umount /.old: {os.strerror(error)}")
    os.rmdir("/.old")


def _bind(fd: int, path: str) -> None:
    """Bind what ``fd`` opened (before its place was hidden) at ``path``."""
    if os.path.isdir(f"/proc/self/fd/{fd}"):
        os.makedirs(path, exist_ok=True)
    elif not os.path.lexists(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        open(path, "a").close()
    _mount(f"/proc/self/fd/{fd}", path, None, MS_BIND | MS_REC)


def _open_dir(path: str) -> int:
    return os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)


def _write(path: str, data: bytes) -> None:
    with open(path, "wb") as out:
        out.write(data)


def _exists(path: str) -> bool:
    return os.path.lexists(path) and os.path.exists(path)


def _mount_points() -> list[str]:
    points = []
    with open("/proc/self/mountinfo", encoding="utf-8") as lines:
        for line in lines:
            point = line.split()[4]
            points.append(point.encode().decode("unicode_escape"))  # \040 is a space
    return points


def _read_only(point: str) -> None:
    kept = 0
    flags = os.statvfs(point).f_flag
    for statvfs_flag, mount_flag in KEPT_FLAGS.items():
        if flags & statvfs_flag:
            kept |= mount_flag
    _mount(None, point, None, MS_REMOUNT | MS_BIND | MS_RDONLY | kept)


def _mount(source, target, kind, flags, data=None) -> None:
    encoded = [s.encode() if s is not None else None for s in (source, target, kind, data)]
    if _libc.mount(encoded[0], encoded[1], encoded[2], flags, encoded[3]) != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"mount {target}: {os.strerror(error)}")


def under(path: str, folder: str) -> bool:
    """``path`` is ``folder`` or lies in it."""
    return path == folder or path.startswith(folder.rstrip("/") + "/")
