"""Machines simulated by network namespaces (iproute2, root only): a bridge on the host, and
each namespace joined to it by a veth pair whose host end the test sets down to cut that
machine off (a partition: calls in flight hang, new ones find no way) and up to heal it.

Everything made here (namespaces, veths, the bridge, the processes started in them) is torn
down when the block ends, whatever happened in it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest

IP = "ip"


def usable() -> str | None:
    """Why network namespaces cannot be made here (None: they can)."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    if shutil.which(IP) is None:
        return "no `ip` (iproute2)"
    return None


def _ip(*args: str) -> None:
    subprocess.run([IP, *args], check=True, capture_output=True, timeout=30)


@attrs.define
class Machine:
    """A namespace on the bridge: its address, and the host end of its link."""

    name: str
    address: str
    link: str

    @property
    def prefix(self) -> tuple[str, ...]:
        """The argv prefix that runs a command on this machine."""
        return (IP, "netns", "exec", self.name)

    def cut(self) -> None:
        _ip("link", "set", self.link, "down")

    def heal(self) -> None:
        _ip("link", "set", self.link, "up")


@attrs.define
class Network:
    """The bridge, the host's address on it, and the machines joined to it."""

    tag: str
    subnet: int
    bridge: str
    host: str
    machines: list[Machine] = attrs.field(factory=list)
    processes: list[subprocess.Popen[bytes]] = attrs.field(factory=list)

    def machine(self, role: str) -> Machine:
        """A new namespace on the bridge (its loopback up), named for its `role`."""
        number = len(self.machines) + 2
        name = f"runner-{self.tag}-{role}"
        host_end, inside = f"rv{self.tag}{number}", f"rn{self.tag}{number}"
        _ip("netns", "add", name)
        machine = Machine(name, f"10.{self.subnet}.0.{number}", host_end)
        self.machines.append(machine)
        _ip("link", "add", host_end, "type", "veth", "peer", "name", inside)
        _ip("link", "set", inside, "netns", name)
        _ip("link", "set", host_end, "master", self.bridge)
        _ip("link", "set", host_end, "up")
        _ip("-n", name, "addr", "add", f"{machine.address}/24", "dev", inside)
        _ip("-n", name, "link", "set", inside, "up")
        _ip("-n", name, "link", "set", "lo", "up")
        return machine

    def start(self, machine: Machine, argv: list[str], log: Path) -> subprocess.Popen[bytes]:
        """`argv` on `machine` in a process group of its own, stopped at the end."""
        with log.open("ab") as out:
            process = subprocess.Popen(
                [*machine.prefix, *argv], stdout=out, stderr=out, start_new_session=True
            )
        self.processes.append(process)
        return process

    def tear_down(self) -> None:
        for process in self.processes:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(10)
        for machine in self.machines:
            subprocess.run([IP, "link", "del", machine.link], capture_output=True, check=False)
            subprocess.run([IP, "netns", "del", machine.name], capture_output=True, check=False)
        subprocess.run([IP, "link", "del", self.bridge], capture_output=True, check=False)


@contextlib.contextmanager
def network() -> Iterator[Network]:
    """A bridge of its own on the host (10.S.0.1/24, S a subnet no other test uses), torn
    down with every namespace and process on it when the block ends."""
    why = usable()
    if why is not None:
        pytest.skip(why)
    tag = uuid.uuid4().hex[:5]
    subnet = 100 + int(tag, 16) % 150
    net = Network(tag, subnet, f"rbr{tag}", f"10.{subnet}.0.1")
    try:
        _ip("link", "add", net.bridge, "type", "bridge")
        _ip("addr", "add", f"{net.host}/24", "dev", net.bridge)
        _ip("link", "set", net.bridge, "up")
        yield net
    finally:
        net.tear_down()
