"""The sandbox an agent runs in: a boundary built from what Linux gives an
unprivileged user, with the gateways as its only doors.

Each agent process gets its own user, network, PID, mount, UTS, IPC and cgroup
namespaces
(``unshare`` from util-linux: on every Linux that has namespaces at all, where
bubblewrap is often missing and cannot do the network part alone), and a first
process of helixbench's own inside them (:mod:`.inside`) that makes loopback the
only network, serves the doors, moves the agent into a new root that holds only its
own code, its runtime and its question (:mod:`.root`), holds it to its caps
(:mod:`.limits`) and a seccomp filter (:mod:`.syscalls`), and starts it with no
capabilities (``setpriv``). Outside, the gateways listen on Unix sockets in the run
job's agents folder, which the doors inside reach and the agent cannot see.

Needs ``unshare``, ``setpriv`` (util-linux), ``ip`` (iproute2) and ``nft``
(nftables), and a kernel that lets an unprivileged user create a user namespace:
:func:`unavailable` says what is missing and how to get it.
"""

from __future__ import annotations

import datetime
import functools
import hashlib
import itertools
import json
import logging
import os
import shutil
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

from . import limits, root, syscalls

INSIDE = Path(__file__).with_name("inside.py")
NAMESPACES = ("--user", "--map-root-user", "--net", "--pid", "--fork", "--kill-child")
NAMESPACES += ("--mount", "--mount-proc", "--uts", "--ipc")  # (cgroup: inside.py's own)
# The first process's command line, as every process inside may read it: a neutral
# name, its program and spec reached by descriptor (``/proc/self/fd/N``), never the
# host's paths (the venv, the checkout, the agents folder). The interpreter starts
# under its own path and at once runs itself again under the neutral one, before any
# process of the agent exists.
FIRST_PROCESS = "helixbench-sandbox"
BOOT = "import sys;sys.path.insert(0,sys.argv[1]);import inside;sys.exit(inside.main(sys.argv[2]))"
RENAMED = (
    f"import os,sys;os.execv(sys.executable,[{FIRST_PROCESS!r},'-I','-c',{BOOT!r},*sys.argv[1:]])"
)
DROP_PRIVILEGES = (
    "setpriv",
    "--inh-caps=-all",
    "--ambient-caps=-all",
    "--bounding-set=-all",
    "--no-new-privs",
    "--",
)
PROGRAMS = {
    "unshare": "util-linux",
    "setpriv": "util-linux",
    "ip": "iproute2",
    "nft": "nftables",
}
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# The tool gateway's sockets for the sandboxes: the public hosts' front (ports 443 and
# 80 inside), and the channel only their first processes write refusals to.
FRONT_SOCKET = "tool-front.sock"
RECORDS_SOCKET = "records.sock"
COOPERATIVE = "set `sandbox: cooperative` on the method to run it without one (marked unsandboxed)"


class SandboxUnavailable(RuntimeError):
    """This machine cannot build an agent's sandbox; the message says why and the fix."""


@functools.cache
def unavailable() -> str | None:
    """Why agents cannot be sandboxed here (the cause and the fix), or None."""
    path = f"{os.environ.get('PATH', '')}:{SYSTEM_PATH}"
    missing = [p for p in PROGRAMS if shutil.which(p, path=path) is None]
    if missing:
        packages = " ".join(sorted({PROGRAMS[p] for p in missing}))
        return (
            f"the agent sandbox needs {', '.join(missing)}: install {packages} "
            f"(Debian/Ubuntu: apt-get install {packages}), or {COOPERATIVE}"
        )
    probe = subprocess.run(
        ["unshare", *NAMESPACES, "--", "nft", "list", "ruleset"],
        capture_output=True,
        text=True,
        env={"PATH": path},
    )
    if probe.returncode == 0:
        return None
    said = probe.stderr.strip().splitlines()[-1:] or ["no message"]
    return f"the agent sandbox cannot start ({said[0]}): {_cause()}; or {COOPERATIVE}"


def _cause() -> str:
    if _read("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") == "1":
        return (
            "Ubuntu restricts unprivileged user namespaces (AppArmor); allow them with "
            "`sudo sysctl kernel.apparmor_restrict_unprivileged_userns=0` or an AppArmor "
            "profile that grants `userns` to unshare"
        )
    if _read("/proc/sys/user/max_user_namespaces") == "0":
        return "user namespaces are off: `sudo sysctl user.max_user_namespaces=15000`"
    if _read("/proc/sys/kernel/unprivileged_userns_clone") == "0":
        return "user namespaces are off: `sudo sysctl kernel.unprivileged_userns_clone=1`"
    if os.path.exists("/.dockerenv") or "docker" in (_read("/proc/1/cgroup") or ""):
        return (
            "Docker's default seccomp profile forbids namespaces; run the container with "
            "`--security-opt seccomp=unconfined --security-opt apparmor=unconfined` "
            "(or --privileged)"
        )
    return "this kernel or its security policy refuses a user namespace"


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def require() -> None:
    problem = unavailable()
    if problem:
        raise SandboxUnavailable(problem)


class Sandbox:
    """The sandbox of one run job's agents: its certificate authority, the gateways'
    Unix sockets (in ``doors``, inside the job's agents folder) and the command that
    runs an agent inside."""

    def __init__(
        self, agents_dir: Path, doors: Path, hosts, gateways: dict[int, str], recorder_key: str
    ):
        # gateways: the port each gateway has on 127.0.0.1 -> its socket's name in doors;
        # recorder_key: what the records socket asks of a first process that reports
        self.agents_dir, self.doors = agents_dir, doors
        self.recorder_key = recorder_key
        self.hosts = sorted({h.lower() for h in hosts})
        self.gateways = {str(port): name for port, name in gateways.items()}
        self.authority = self.doors / "authority.pem"
        write_certificates(self.doors, self.hosts)

    @property
    def authority_inside(self) -> str:
        """The path of the run's CA certificate as the agent sees it."""
        return f"{root.OWN_DIR}/ca.pem"

    def ca_env(self) -> dict[str, str]:
        """The variables common clients read for their trusted certificates."""
        ca = self.authority_inside
        names = ("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "NODE_EXTRA_CA_CERTS")
        java = f"-Djavax.net.ssl.trustStore={ca.removesuffix('.pem')}.jks"
        java += " -Djavax.net.ssl.trustStorePassword=changeit"
        return {name: ca for name in (*names, "GIT_SSL_CAINFO", "AWS_CA_BUNDLE")} | {
            "JAVA_TOOL_OPTIONS": java
        }

    def confine(
        self,
        argv,
        env: dict,
        question_dir: Path,
        token: str,
        visible,
        caps: limits.Limits,
        per_question: bool,
    ) -> Confinement:
        """What runs ``argv`` in a sandbox of its own: ``env`` its whole environment,
        ``question_dir`` its writable folder (and working directory), ``visible`` the
        paths it may read besides the system's, ``caps`` its limits."""
        name = f"helixbench-{os.getpid()}-{next(_SANDBOXES)}"
        env, argv = own_path(env, list(argv), visible)
        cgroups = limits.cgroups()
        box = cgroups.make(name, caps) if cgroups else None
        bpf, names = syscalls.program()
        spec = {
            "sockets": str(self.doors),
            "certificate": str(self.doors / "front.pem"),
            "key": str(self.doors / "front.key"),
            "authority": str(self.authority),
            "java_truststore": str(self.doors / "authority.jks"),
            "hosts": self.hosts,
            "gateways": self.gateways,
            "front": FRONT_SOCKET,
            "records": RECORDS_SOCKET,
            "recorder_key": self.recorder_key,
            "question_dir": str(question_dir),
            "visible": sorted({str(p) for p in visible}),
            "token": token,
            "drop_privileges": list(DROP_PRIVILEGES),
            "argv": list(argv),
            "env": env,
            "cwd": str(question_dir),
            "limits": caps.as_dict(),
            "per_question": per_question,
            "cgroup_procs": box.procs if box else [],
            "status": f"{name}.status.json",
            "seccomp": bpf.hex(),
            "syscall_names": names,
        }
        # A file of no name (a command line is everyone's to read on a shared node, and
        # this one holds the question's token), and the first process's own folder, both
        # handed over by descriptor: nothing inside names a host path.
        spec_file = tempfile.TemporaryFile(dir=self.doors)
        spec_file.write(json.dumps(spec).encode())
        spec_file.seek(0)
        program = os.open(INSIDE.parent, os.O_RDONLY | os.O_DIRECTORY)
        fds = (program, os.dup(spec_file.fileno()))
        spec_file.close()
        command = ["unshare", *NAMESPACES, "--", sys.executable, "-I", "-c", RENAMED]
        command += [f"/proc/self/fd/{fds[0]}", f"/proc/self/fd/{fds[1]}"]
        held = limits.held(caps, cgroups)
        return Confinement(command, self.doors / spec["status"], box, held, fds)

    @staticmethod
    def launcher_env() -> dict[str, str]:
        """The environment of ``unshare`` and the first process: a PATH, nothing else."""
        return {"PATH": f"{os.environ.get('PATH', '')}:{SYSTEM_PATH}"}


_SANDBOXES = itertools.count()


def own_path(env: dict, argv: list[str], visible) -> tuple[dict, list[str]]:
    """The agent's ``PATH`` with only the folders its root holds (the system's, and
    those it is shown), never the run job's others (the user's home, their tools);
    a program ``argv`` names by a name only such a folder holds, by its whole path."""
    shown = [os.path.normpath(str(p)) for p in visible]
    given = env.get("PATH", "")
    kept = []
    for folder in given.split(os.pathsep):
        folder = os.path.normpath(folder) if folder else ""
        inside = any(root.under(folder, d) for d in (*root.SYSTEM_DIRS, *shown))
        if os.path.isabs(folder) and inside and folder not in kept:
            kept.append(folder)
    path = os.pathsep.join(kept) or "/usr/local/bin:/usr/bin:/bin"
    if argv and os.sep not in argv[0] and shutil.which(argv[0], path=path) is None:
        found = shutil.which(argv[0], path=given)
        argv = [found, *argv[1:]] if found else argv
    return {**env, "PATH": path}, argv


class Confinement:
    """One sandboxed process, seen from the run job: the command that starts it, the
    usage its first process publishes, the caps it reached, and what holds each."""

    def __init__(self, command: list[str], status: Path, box, held: dict[str, str], pass_fds=()):
        self.command, self.status_file, self.box, self.held = command, status, box, held
        self.pass_fds = tuple(pass_fds)  # what the command's process must inherit

    def started(self) -> None:
        """The command's process has its descriptors: the run job's copies go."""
        for fd in self.pass_fds:
            try:
                os.close(fd)
            except OSError:
                pass
        self.pass_fds = ()

    def status(self) -> dict:
        """The latest usage its first process published ({} before the first)."""
        try:
            return json.loads(self.status_file.read_text())
        except (OSError, ValueError):
            return {}

    def reached(self, failed_with: str | None = None) -> list[str]:
        """The caps it reached: the cgroup's counts, what its first process saw, and
        the rlimits ``failed_with`` (the error output of an agent that failed) names."""
        found = set(self.status().get("reached", []))
        if self.box is not None:
            found |= set(self.box.reached())
        found |= set(limits.said(failed_with or "", self.box is not None))
        return [cap for cap in limits.CAPS if cap in found]

    def close(self) -> None:
        self.started()
        failure = self.status_file.with_name(self.status_file.name + ".error")
        try:  # the first process's own failure: its traceback to the run's log
            said = failure.read_text(encoding="utf-8", errors="replace")
            failure.unlink()
        except OSError:
            said = ""
        if said:
            logging.getLogger("helixbench.sandbox").error("the sandbox failed:\n%s", said[-20000:])
        if self.box is not None:
            self.box.remove()
        for path in (self.status_file, self.status_file.with_name(self.status_file.name + ".part")):
            path.unlink(missing_ok=True)


def write_certificates(folder: Path, hosts: list[str]) -> None:
    """A certificate authority made for this run (its key never written) and the
    front's certificate for ``hosts``, signed by it: ``authority.pem``, ``front.pem``,
    ``front.key`` in ``folder``."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = datetime.datetime.now(datetime.UTC)
    valid = (now - datetime.timedelta(days=1), now + datetime.timedelta(days=30))
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "helixbench agent sandbox CA")])
    authority = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(valid[0])
        .not_valid_after(valid[1])
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_signs_certificates(x509), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), False)
        .sign(ca_key, hashes.SHA256())
    )
    front = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, hosts[0])]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(valid[0])
        .not_valid_after(valid[1])
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(h) for h in hosts]), False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), False
        )
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    (folder / "authority.pem").write_bytes(authority.public_bytes(pem))
    der = authority.public_bytes(serialization.Encoding.DER)
    (folder / "authority.jks").write_bytes(java_truststore(der, int(now.timestamp() * 1000)))
    (folder / "front.pem").write_bytes(front.public_bytes(pem))
    key_file = folder / "front.key"
    key_file.touch(mode=0o600)
    key_file.write_bytes(
        key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )


def java_truststore(certificate: bytes, millis: int, password: str = "changeit") -> bytes:
    """A Java KeyStore (JKS) that trusts one DER ``certificate``: Java reads neither
    PEM bundles nor SSL_CERT_FILE, and a PKCS#12 file needs an attribute only Java's
    own tools write."""
    alias = b"helixbench-sandbox"
    body = struct.pack(">IIIIH", 0xFEEDFEED, 2, 1, 2, len(alias)) + alias
    body += struct.pack(">QH", millis, 5) + b"X.509" + struct.pack(">I", len(certificate))
    body += certificate
    key = password.encode("utf-16-be") + b"Mighty Aphrodite"  # JKS's integrity check
    return body + hashlib.sha1(key + body).digest()


def _signs_certificates(x509):
    flags = dict.fromkeys(
        ("digital_signature", "content_commitment", "key_encipherment", "data_encipherment"),
        False,
    )
    flags |= {"key_agreement": False, "encipher_only": False, "decipher_only": False}
    return x509.KeyUsage(**flags, key_cert_sign=True, crl_sign=True)
