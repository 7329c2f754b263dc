"""NCCL's own lines in a console log (``NCCL_DEBUG=INFO``), and the failure patterns the status scanner shares.

:func:`scan_nccl` reads a bounded piece of each console log: its first :data:`HEAD_BYTES` (NCCL prints its
topology when a communicator is created, at the start of training) and its last
:data:`~tanalyze.runstatus.scan.TAIL_BYTES` (a watchdog timeout ends the log); a file no longer than both is
read once, whole. What it finds (frozen :class:`NcclScan`):

- the transports of the connections NCCL built (``Channel 00/0 : 0[0] -> 1[1] via P2P/IPC``,
  ``… [send] via NET/Socket/0``, ``via NET/IB/0/GDRDMA``, ``via SHM/direct/direct``), counted by the
  ``via`` text as printed;
- the network it chose (``NCCL INFO Using network Socket|IB|IBext``) and whether InfiniBand/RoCE devices were
  found (``NET/IB : Using [0]mlx5_0:1/IB``) or not (``NET/IB : No device found``);
- the hosts that printed (the ``host:pid:tid [dev]`` prefix), the size of the largest communicator
  (``comm 0x… rank 0 nranks 8 …``), ring and tree lines;
- ``NCCL WARN`` lines, and PyTorch's watchdog timeouts
  (``[Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, …,
  Timeout(ms)=600000) ran for 600013 milliseconds before timing out.``) with the rank and the collective.

Communicators created in the middle of a long log (beyond the head) are not seen; ``partial`` says when the
file was longer than what was read. No judgement here: :mod:`tanalyze.analysis.nccl` makes the findings.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tanalyze.runstatus.model import Evidence

__all__ = ["HEAD_BYTES", "NCCL_FAILURE", "NcclTimeout", "NcclScan", "scan_nccl", "transport_class"]

#: How much of the start of a console log is read for NCCL's topology lines.
HEAD_BYTES = 4 * 1024 * 1024
#: How much of its end is read for timeouts (the status scanner's tail).
TAIL_BYTES = 128 * 1024
#: NCCL WARN lines kept as evidence (all are counted).
MAX_WARNINGS = 20
#: Timeouts kept (all are counted).
MAX_TIMEOUTS = 50
_SHOWN = 240

#: A collective that timed out or failed, or a distributed backend error: one pattern for the run-status scanner
#: (a run that ended this way is ``nccl_timeout``) and for this one.
NCCL_FAILURE = re.compile(
    r"Watchdog caught collective operation timeout|collective operation timeout|ProcessGroupNCCL.*(?:timeout|abort)"
    r"|NCCL (?:error|timeout|communicator was aborted)|\bnccl\w*Error\b|RuntimeError: NCCL|DistBackendError"
    r"|Timed out waiting \d+ms for (?:recv|send) operation|DistNetworkError|DistStoreError"
    r"|Connection closed by peer|heartbeat monitor|NCCL_TIMEOUT", re.IGNORECASE)

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
#: ``NCCL version 2.10.3+cuda11.3`` (printed by rank 0, often glued to another rank's line)
_VERSION = re.compile(r"NCCL version (\d+\.\d+\.\d+)(?:\+cuda[\d.]*\d)?")
#: ``[time stamp] host:pid:tid [dev] file.cc:123 NCCL WARN …`` / ``host:pid:tid [dev] NCCL INFO …``
_PREFIX = re.compile(r"(?:^|(?<=[\s\]]))(?P<host>[A-Za-z0-9<][\w.<>-]*):(?P<pid>\d+):(?P<tid>\d+) \[(?P<dev>\d+)\]"
                     r"(?: \S+:\d+)?$")
_CHANNEL = re.compile(r"^Channel (\d+)(?:/\d+)? : (\d+)\[[0-9a-fx]+\] -> (\d+)\[[0-9a-fx]+\]"
                      r"(?: \[(?:send|receive)\])? via (\S+)")
_RING = re.compile(r"^(?:Ring \d+|Channel \d+/\d+) :(?:\s+\d+)+\s*$")
_NETWORK = re.compile(r"^Using network (\S+(?: \S+)?)\s*$")
_IB_FOUND = re.compile(r"^NET/IB ?: Using \[\d+\]")
_IB_NONE = re.compile(r"^NET/IB ?: No device found")
_COMM = re.compile(r"\bcomm 0x[0-9a-f]+ rank (\d+) nranks (\d+)\b(?: nNodes (\d+))?", re.IGNORECASE)
_WATCHDOG = re.compile(
    r"(?:\[(?:PG [^\]]*?)?Rank (?P<rank>\d+)\] )?Watchdog caught collective operation timeout: "
    r"WorkNCCL\(SeqNum=(?P<seq>\d+), OpType=(?P<op>\w+)(?:, \w+=[^,()]*)*(?:, Timeout\(ms\)=(?P<timeout>\d+))?\)"
    r"(?: ran for (?P<ran>\d+) milliseconds)?")
_TORCH_RANK = re.compile(r"\[rank(\d+)\]:")


@dataclass(frozen=True)
class NcclTimeout:
    """One watchdog timeout: which rank, which collective (``OpType``), its sequence number and times."""

    rank: int | None
    op: str
    seq: int | None
    timeout_ms: float | None
    ran_ms: float | None
    evidence: Evidence

    def to_dict(self) -> dict[str, Any]:
        return {"rank": self.rank, "op": self.op, "seq": self.seq, "timeout_ms": self.timeout_ms,
                "ran_ms": self.ran_ms, "evidence": self.evidence.to_dict()}


@dataclass(frozen=True)
class NcclScan:
    """What NCCL printed in a run's console logs (see the module doc); empty fields when it printed nothing."""

    files: tuple[str, ...] = ()
    version: str = ""
    hosts: tuple[str, ...] = ()
    nranks: int | None = None
    #: ``nNodes`` of the largest communicator, as newer NCCL versions print it (None: not printed)
    nodes: int | None = None
    #: ``via`` text as printed → connections (``P2P/IPC/read``, ``NET/Socket/0``, ``SHM/direct/direct``)
    transports: tuple[tuple[str, int], ...] = ()
    #: the first connection line of each transport class, as evidence
    transport_lines: tuple[Evidence, ...] = ()
    networks: tuple[str, ...] = ()
    #: True: NCCL found InfiniBand/RoCE devices; False: it said it found none; None: it did not say
    ib_devices: bool | None = None
    ib_evidence: Evidence | None = None
    network_evidence: Evidence | None = None
    rings: int = 0
    trees: int = 0
    warnings: tuple[Evidence, ...] = ()
    warnings_total: int = 0
    timeouts: tuple[NcclTimeout, ...] = ()
    timeouts_total: int = 0
    #: a file was longer than the head and tail read: lines in its middle were not looked at
    partial: bool = False

    @property
    def found(self) -> bool:
        """NCCL printed something this scan understood."""
        return bool(self.version or self.transports or self.networks or self.nranks or self.warnings_total
                    or self.timeouts_total or self.ib_devices is not None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "files": list(self.files), "version": self.version, "hosts": list(self.hosts), "nranks": self.nranks, "nodes": self.nodes,
            "transports": dict(self.transports), "transport_lines": [e.to_dict() for e in self.transport_lines],
            "networks": list(self.networks), "ib_devices": self.ib_devices,
            "ib_evidence": self.ib_evidence.to_dict() if self.ib_evidence else None,
            "network_evidence": self.network_evidence.to_dict() if self.network_evidence else None,
            "rings": self.rings, "trees": self.trees, "warnings": [e.to_dict() for e in self.warnings],
            "warnings_total": self.warnings_total, "timeouts": [t.to_dict() for t in self.timeouts],
            "timeouts_total": self.timeouts_total, "partial": self.partial,
        }


def transport_class(via: str) -> str:
    """The kind of a ``via`` text: ``P2P`` (NVLink or PCIe peer access, also ``P2P/CUMEM``), ``SHM``,
    ``NET/IB`` (InfiniBand or RoCE, also the ``IBext`` plugin), ``NET/Socket``, ``COLLNET``, ``NVLS`` or
    ``NET/<name>`` for another network plugin."""
    head = via.split("/")
    first = head[0].upper()
    if first in ("P2P", "SHM", "COLLNET", "NVLS"):
        return first
    if first == "NET" and len(head) > 1:
        name = head[1]
        if name.lower().startswith("ib"):
            return "NET/IB"
        if name.lower() == "socket":
            return "NET/Socket"
        return f"NET/{name}"
    return via


def _shown(line: str) -> str:
    line = line.strip()
    return line if len(line) <= _SHOWN else line[:_SHOWN] + " …"


def _pieces(path: Path) -> tuple[list[tuple[int | None, str]], bool]:
    """The lines read from ``path`` with their 1-based numbers (None where not counted) and whether the file
    was longer than what was read."""
    size = path.stat().st_size
    with open(path, "rb") as handle:
        if size <= HEAD_BYTES + TAIL_BYTES:
            text = handle.read().decode("utf-8", errors="replace")
            return [(n + 1, line) for n, line in enumerate(text.split("\n"))], False
        head = handle.read(HEAD_BYTES).decode("utf-8", errors="replace")
        handle.seek(size - TAIL_BYTES)
        tail = handle.read(TAIL_BYTES).decode("utf-8", errors="replace")
    head_lines = head.split("\n")[:-1]  # the last piece is cut by the window
    tail_lines = tail.split("\n")[1:]
    return [(n + 1, line) for n, line in enumerate(head_lines)] + [(None, line) for line in tail_lines], True


def scan_nccl(paths: Iterable[str | os.PathLike[str]]) -> NcclScan | None:
    """NCCL's topology, warnings and timeouts in the console logs ``paths`` (None: none of them holds any).

    Reads at most :data:`HEAD_BYTES` + :data:`TAIL_BYTES` of each file; an unreadable file is skipped."""
    hosts: dict[str, None] = {}
    transports: Counter[str] = Counter()
    examples: dict[str, Evidence] = {}
    networks: dict[str, None] = {}
    version = ""
    nranks: int | None = None
    nodes: int | None = None
    ib: bool | None = None
    ib_evidence = network_evidence = None
    rings = trees = 0
    warnings: list[Evidence] = []
    warnings_total = 0
    timeouts: list[NcclTimeout] = []
    timeouts_total = 0
    partial = False
    files: list[str] = []
    for path in dict.fromkeys(str(p) for p in paths):
        try:
            lines, cut = _pieces(Path(path))
        except OSError:
            continue
        seen_here = False
        for number, raw in lines:
            if "NCCL" not in raw and "Watchdog" not in raw:
                continue
            line = (_ANSI.sub("", raw) if "\x1b" in raw else raw).rstrip("\r")
            got = _VERSION.search(line) if "NCCL version" in line else None
            if got:
                version = version or got.group(1)
                line = line[:got.start()] + " " + line[got.end():]
                seen_here = True
            if "Watchdog caught" in line:
                dog = _WATCHDOG.search(line)
                if dog:
                    timeouts_total += 1
                    seen_here = True
                    if len(timeouts) < MAX_TIMEOUTS:
                        rank = dog.group("rank")
                        if rank is None:
                            prefix = _TORCH_RANK.search(line)
                            rank = prefix.group(1) if prefix else None
                        timeouts.append(NcclTimeout(
                            int(rank) if rank is not None else None, dog.group("op"), int(dog.group("seq")),
                            float(dog.group("timeout")) if dog.group("timeout") else None,
                            float(dog.group("ran")) if dog.group("ran") else None,
                            Evidence(path, number, _shown(line[dog.start():]))))
                continue
            at = line.find(" NCCL INFO ")
            level = "INFO"
            if at < 0:
                at, level = line.find(" NCCL WARN "), "WARN"
                if at < 0:
                    continue
            m = _PREFIX.search(line, max(0, at - 200), at)  # host:pid:tid [dev] (file.cc:123) right before it
            if m is None:
                continue
            seen_here = True
            hosts.setdefault(m.group("host"))
            message = line[at + 11:].strip()
            if level == "WARN":
                warnings_total += 1
                if len(warnings) < MAX_WARNINGS:
                    warnings.append(Evidence(path, number, _shown(line[m.start("host"):])))
                continue
            channel = _CHANNEL.match(message) if message.startswith("Channel") else None
            if channel:
                via = channel.group(4)
                transports[via] += 1
                kind = transport_class(via)
                if kind not in examples:
                    examples[kind] = Evidence(path, number, _shown(line[m.start("host"):]))
                continue
            if message.startswith(("Ring", "Channel")) and _RING.match(message):
                rings += 1
                continue
            if message.startswith("Trees"):
                trees += 1
                continue
            network = _NETWORK.match(message) if message.startswith("Using network") else None
            if network:
                networks.setdefault(network.group(1))
                network_evidence = network_evidence or Evidence(path, number, _shown(line[m.start("host"):]))
                continue
            if not message.startswith("NET/IB") and "comm 0x" not in message:
                continue
            if _IB_FOUND.match(message):
                if ib is not True:
                    ib_evidence = Evidence(path, number, _shown(line[m.start("host"):]))
                ib = True
                continue
            if _IB_NONE.match(message):
                if ib is None:
                    ib, ib_evidence = False, Evidence(path, number, _shown(line[m.start("host"):]))
                continue
            comm = _COMM.search(message)
            if comm:
                nranks = max(nranks or 0, int(comm.group(2)))
                if comm.group(3):
                    nodes = max(nodes or 0, int(comm.group(3)))
        if seen_here:
            files.append(path)
            partial = partial or cut
    scan = NcclScan(
        files=tuple(files), version=version, hosts=tuple(hosts), nranks=nranks, nodes=nodes,
        transports=tuple(sorted(transports.items(), key=lambda kv: (-kv[1], kv[0]))),
        transport_lines=tuple(examples.values()), networks=tuple(networks), ib_devices=ib, ib_evidence=ib_evidence,
        network_evidence=network_evidence, rings=rings, trees=trees, warnings=tuple(warnings),
        warnings_total=warnings_total, timeouts=tuple(timeouts), timeouts_total=timeouts_total, partial=partial)
    return scan if scan.found else None

