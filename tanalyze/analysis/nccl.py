"""What NCCL's console lines say about a run: the transports it used, warnings and collective timeouts.

Input is the :class:`~tanalyze.runstatus.nccl.NcclScan` that the run-status layer read from the run's console
logs (``NCCL_DEBUG=INFO`` lines, PyTorch's watchdog). What can be inferred from them, and what cannot:

- A connection ``via NET/Socket`` goes through TCP: slow next to NVLink/PCIe peer access (``P2P``), shared
  memory (``SHM``) or InfiniBand/RoCE (``NET/IB``). NCCL builds a network connection between two ranks it
  places on different hosts, or on one host when P2P and SHM are disabled. Whether IB *was expected* is
  known only when NCCL says so: ``NET/IB : Using [0]mlx5_0:1/IB`` (it found IB devices, so sockets are a
  fallback: ``nccl_slow_transport``, warning) or ``NET/IB : No device found`` (sockets were the only network
  there: the same finding as info). When the log says neither, the finding says it cannot tell.
- A job whose NCCL lines come from one host and whose connections all use ``SHM`` (none ``P2P``) passes data
  through host memory: info, P2P is disabled or unsupported there.
- ``Using network Socket`` alone is printed on single-node jobs too (the network NCCL would use between
  nodes): it counts only when the lines come from several hosts.
- A watchdog timeout names the rank that reported it and the collective (``OpType``, ``SeqNum``); every rank
  waiting on a lost peer reports the same ``SeqNum``, so the ranks that did *not* report one (out of
  ``nranks``) are where to look: ``nccl_timeout`` (error).
- ``NCCL WARN`` lines: ``nccl_warnings`` (info), with the first of them.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from tanalyze.analysis.recommendations import recommend
from tanalyze.analysis.results import Finding, ResultMixin, Severity
from tanalyze.runstatus.nccl import NcclScan, transport_class

__all__ = ["NcclAnalysis", "analyze_nccl"]


@dataclass(frozen=True)
class NcclAnalysis(ResultMixin):
    #: connections per transport kind (``P2P``, ``SHM``, ``NET/IB``, ``NET/Socket`` …)
    transport_kinds: dict[str, int]
    #: how many hosts printed NCCL lines; ``nranks`` of the largest communicator (None: not printed)
    hosts: int
    nranks: int | None
    #: ranks that reported a watchdog timeout, and those of ``nranks`` that did not
    timed_out_ranks: tuple[int, ...]
    silent_ranks: tuple[int, ...]
    scan: NcclScan
    findings: tuple[Finding, ...]


def _ev(evidence: Any) -> dict[str, Any] | None:
    return evidence.to_dict() if evidence is not None else None


def _slow_transport(scan: NcclScan, kinds: Counter[str]) -> Finding | None:
    total = sum(kinds.values())
    sockets = kinds.get("NET/Socket", 0)
    several_hosts = len(scan.hosts) >= 2 or (scan.nodes or 0) >= 2
    socket_network = any(n.lower() == "socket" for n in scan.networks)
    evidence = {"transports": dict(kinds), "networks": list(scan.networks), "hosts": len(scan.hosts),
                "nranks": scan.nranks, "ib_devices": scan.ib_devices, "ib_line": _ev(scan.ib_evidence),
                "lines": [e.to_dict() for e in scan.transport_lines]}
    if sockets or (socket_network and several_hosts and not kinds.get("NET/IB")):
        what = (f"{sockets:,} of {total:,} NCCL connections go through TCP sockets (NET/Socket)" if sockets
                else f"NCCL chose the Socket network for a job on {max(len(scan.hosts), scan.nodes or 0)} nodes")
        if scan.ib_devices is True:
            return Finding("nccl_slow_transport", Severity.WARNING,
                           f"{what} although NCCL found InfiniBand/RoCE devices ({scan.ib_evidence.text if scan.ib_evidence else 'NET/IB : Using …'}): "
                           "the job fell back to sockets where IB was available.",
                           recommend("nccl_slow_transport"), evidence=evidence)
        if scan.ib_devices is False:
            return Finding("nccl_slow_transport", Severity.INFO,
                           f"{what}; NCCL found no InfiniBand/RoCE device (NET/IB : No device found), so sockets "
                           "were the only network it had. Expected on an Ethernet-only cluster; on one with IB, "
                           "the IB driver or device was not visible to the job.",
                           recommend("nccl_slow_transport"), evidence=evidence)
        return Finding("nccl_slow_transport", Severity.WARNING,
                       f"{what}. Sockets are the slowest transport; the log does not say whether InfiniBand/RoCE "
                       "was available (NCCL prints 'NET/IB : Using …' or 'NET/IB : No device found' at "
                       "NCCL_DEBUG=INFO).", recommend("nccl_slow_transport"), evidence=evidence)
    if len(scan.hosts) == 1 and (scan.nodes or 1) == 1 and kinds.get("SHM") and not kinds.get("P2P") and not any(
            k.startswith("NET/") for k in kinds):
        return Finding("nccl_slow_transport", Severity.INFO,
                       f"All {total:,} NCCL connections on host {scan.hosts[0]} go through shared memory (SHM), none "
                       "through P2P (NVLink or PCIe peer access): P2P is disabled (NCCL_P2P_DISABLE, NCCL_P2P_LEVEL) "
                       "or not supported between these GPUs (another PCIe root, a container, virtualisation).",
                       recommend("nccl_slow_transport"), evidence=evidence)
    return None


def analyze_nccl(scan: NcclScan) -> NcclAnalysis:
    """Findings from what NCCL printed (see the module doc for what can be inferred)."""
    kinds: Counter[str] = Counter()
    for via, count in scan.transports:
        kinds[transport_class(via)] += count
    findings = []
    slow = _slow_transport(scan, kinds)
    if slow is not None:
        findings.append(slow)
    timed_out = tuple(sorted({t.rank for t in scan.timeouts if t.rank is not None}))
    silent: tuple[int, ...] = ()
    if scan.timeouts:
        first = scan.timeouts[0]
        if scan.nranks and timed_out:
            silent = tuple(r for r in range(scan.nranks) if r not in timed_out)
        ops = Counter((t.op, t.seq) for t in scan.timeouts)
        (op, seq), _ = ops.most_common(1)[0]
        who = (f"rank {timed_out[0]}" if len(timed_out) == 1 else
               f"ranks {', '.join(map(str, timed_out))}" if timed_out else "a rank")
        after = (f" after {first.ran_ms / 1000:,.0f} s" if first.ran_ms is not None else "") + (
            f" (timeout {first.timeout_ms / 1000:,.0f} s)" if first.timeout_ms is not None else "")
        look = (f"; rank{'s' if len(silent) > 1 else ''} {', '.join(map(str, silent))} of {scan.nranks} reported "
                "none: the rank that never joined is likely among them" if silent else "")
        findings.append(Finding(
            "nccl_timeout", Severity.ERROR,
            f"A collective timed out: {who} waited in {op} (SeqNum {seq}){after}{look}.",
            recommend("nccl_timeout"),
            evidence={"timeouts": [t.to_dict() for t in scan.timeouts[:8]], "timeouts_total": scan.timeouts_total,
                      "timed_out_ranks": list(timed_out), "silent_ranks": list(silent), "op": op, "seq": seq,
                      "nranks": scan.nranks}))
    if scan.warnings_total:
        findings.append(Finding(
            "nccl_warnings", Severity.INFO,
            f"NCCL printed {scan.warnings_total:,} warning(s); the first: {scan.warnings[0].text}",
            recommend("nccl_warnings"),
            evidence={"warnings": [w.to_dict() for w in scan.warnings], "warnings_total": scan.warnings_total}))
    return NcclAnalysis(dict(kinds), len(scan.hosts), scan.nranks, timed_out, silent, scan, tuple(findings))
