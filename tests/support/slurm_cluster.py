"""A real single-node SLURM cluster for tests, from Debian's packages (slurmctld,
slurmd, munge, slurm-client; reference.md section 6).

Everything lives in a temporary directory: its own munge key and socket, its own
slurm.conf (proctrack/linuxproc, task/none, no accounting) with free ports, state,
spool and logs. The one file outside it is /etc/slurm/slurm.conf, a copy of that
config: Snakemake's job-step executor clears ``SLURM_*`` variables before its
nested ``srun``, which then reads the default location. The copy is made only
where no slurm.conf exists (a machine that has one is not touched) and removed
on exit. :class:`SlurmCluster` starts munged, slurmctld and slurmd in the
foreground as child processes and, on exit, stops exactly those processes by
their ids, nothing else. Clients find the cluster through ``SLURM_CONF``.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

DAEMONS = ("munged", "slurmctld", "slurmd")
DEFAULT_CONF = Path("/etc/slurm/slurm.conf")


class SlurmUnavailable(RuntimeError):
    """The daemons cannot run here; the message says why."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _binary(name: str) -> str:
    path = shutil.which(name) or shutil.which(name, path="/usr/sbin:/usr/bin")
    if path is None:
        raise SlurmUnavailable(
            f"{name} not found; install Debian's slurmctld slurmd munge slurm-client"
        )
    return path


def installed() -> dict[str, str]:
    """The daemons' and clients' paths; SlurmUnavailable naming the packages where one
    is missing (checked before a test does anything else)."""
    return {name: _binary(name) for name in (*DAEMONS, "sinfo", "sbatch", "squeue")}


class SlurmCluster:
    def __init__(self, root: Path, cpus: int = 8, memory_mb: int = 4000):
        self.root = Path(root)
        # The node may claim more CPUs than the machine has (config_overrides), so a
        # 2-core test machine can host a group job of several shards.
        self.cpus = cpus
        self.memory_mb = memory_mb
        self.host = socket.gethostname()
        self.processes: list[subprocess.Popen] = []
        self.conf = self.root / "slurm.conf"
        self.env = {**os.environ, "SLURM_CONF": str(self.conf)}
        self._placed_default = False

    def _write_config(self) -> None:
        root = self.root
        for sub in ("munge", "state", "spool", "log"):
            (root / sub).mkdir(parents=True, exist_ok=True)
        os.chmod(root / "munge", 0o700)
        key = root / "munge" / "munge.key"
        key.write_bytes(os.urandom(1024))
        os.chmod(key, 0o400)
        self.socket = root / "munge" / "munge.socket"
        self.conf.write_text(
            f"""ClusterName=helixbench-test
SlurmctldHost={self.host}
SlurmctldPort={_free_port()}
SlurmdPort={_free_port()}
SlurmUser={os.environ.get("USER", "root") if os.geteuid() else "root"}
AuthType=auth/munge
AuthInfo=socket={self.socket}
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
ReturnToService=2
SlurmdParameters=config_overrides
MinJobAge=600
SlurmctldPidFile={root}/slurmctld.pid
SlurmdPidFile={root}/slurmd.pid
SlurmdSpoolDir={root}/spool
StateSaveLocation={root}/state
SlurmctldLogFile={root}/log/slurmctld.log
SlurmdLogFile={root}/log/slurmd.log
DefMemPerCPU={self.memory_mb // self.cpus}
NodeName={self.host} CPUs={self.cpus} RealMemory={self.memory_mb} State=UNKNOWN
PartitionName=test Nodes={self.host} Default=YES MaxTime=INFINITE State=UP
"""
        )

    def _start(self, *command: str) -> None:
        log = open(self.root / "log" / f"{Path(command[0]).name}.out", "w")  # noqa: SIM115
        proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=self.env)
        self.processes.append(proc)

    def __enter__(self) -> SlurmCluster:
        binaries = installed()
        self._write_config()
        if DEFAULT_CONF.exists():
            raise SlurmUnavailable(
                f"{DEFAULT_CONF} exists: this machine has a SLURM config of its own, which "
                "the test will not overwrite; run it on a machine without one"
            )
        try:
            DEFAULT_CONF.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(self.conf, DEFAULT_CONF)
        except OSError as exc:
            raise SlurmUnavailable(f"cannot write {DEFAULT_CONF} ({exc}); run as root") from None
        self._placed_default = True
        try:
            self._start(
                binaries["munged"],
                "--foreground",
                "--force",
                f"--socket={self.socket}",
                f"--key-file={self.root / 'munge' / 'munge.key'}",
                f"--pid-file={self.root / 'munge' / 'munged.pid'}",
                f"--log-file={self.root / 'log' / 'munged.log'}",
                f"--seed-file={self.root / 'munge' / 'munged.seed'}",
            )
            self._wait(lambda: self.socket.exists(), "munged did not open its socket")
            self._start(binaries["slurmctld"], "-D", "-f", str(self.conf))
            self._start(binaries["slurmd"], "-D", "-f", str(self.conf))
            self._wait(self._node_idle, "the node did not come up idle")
        except BaseException:
            self.__exit__()
            raise
        return self

    def _node_idle(self) -> bool:
        out = subprocess.run(
            ["sinfo", "-h", "-o", "%T"], capture_output=True, text=True, env=self.env
        )
        return out.returncode == 0 and out.stdout.strip() == "idle"

    def _wait(self, ready, message: str, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            dead = [p for p in self.processes if p.poll() is not None]
            if dead:
                raise SlurmUnavailable(f"{dead[0].args[0]} exited ({self.logs()})")
            if ready():
                return
            time.sleep(0.5)
        raise SlurmUnavailable(f"{message} within {timeout:g} s ({self.logs()})")

    def logs(self) -> str:
        parts = []
        for path in sorted((self.root / "log").glob("*")):
            text = path.read_text(errors="replace").strip().splitlines()[-5:]
            parts.append(f"{path.name}: " + " | ".join(text))
        return "; ".join(parts)

    def __exit__(self, *exc) -> None:
        for proc in reversed(self.processes):  # only what we started, by pid
            if proc.poll() is None:
                proc.terminate()
        for proc in reversed(self.processes):
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if self._placed_default:
            DEFAULT_CONF.unlink(missing_ok=True)
            self._placed_default = False
