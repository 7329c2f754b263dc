"""NCCL console lines (tanalyze/runstatus/nccl.py) and what they say (tanalyze/analysis/nccl.py).

NCCL cannot run here (no GPU): the topology lines are those of real public Megatron-DeepSpeed logs, the
fallbacks and timeouts are lines in the formats NCCL's logging documentation and PyTorch's ProcessGroupNCCL
print (host:pid:tid [dev] NCCL INFO …, an optional [time stamp] and file:line before NCCL WARN, the watchdog
message as it appears in public issue reports)."""

from __future__ import annotations

from pathlib import Path

import pytest

import tanalyze
from tanalyze.analysis.nccl import analyze_nccl
from tanalyze.analysis.results import Severity
from tanalyze.runstatus import nccl as nccl_module
from tanalyze.runstatus import run_status
from tanalyze.runstatus.nccl import scan_nccl, transport_class
from tests.conftest import real_log

MEGATRON_LOGS = [
    "megatron_text_log/microsoft__Megatron-DeepSpeed/examples/MoE/log/gpt3-0.125B-tokendropping-graduallyIncrease-lr-3.0e-4.log",
    "megatron_text_log/microsoft__Megatron-DeepSpeed/examples/random_ltd/log/"
    "gpt3-0.125B-tokendropping-graduallyIncrease-lr-3.0e-4-baseline.log",
    "megatron_text_log/microsoft__Megatron-DeepSpeed/examples/random_ltd/log/gpt3-0.125B-tokendropping-graduallyIncrease-lr-3.0e-4.log",
]

SOCKET_TWO_NODES = """\
node-01:1001:1001 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>
node-01:1001:1001 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ; OOB eth0:10.0.0.1<0>
node-01:1001:1001 [0] NCCL INFO Using network Socket
node-02:2002:2002 [0] NCCL INFO Using network Socket
node-01:1001:1100 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via NET/Socket/0
node-01:1001:1100 [0] NCCL INFO Channel 01/0 : 1[0] -> 0[0] [receive] via NET/Socket/0
node-01:1001:1100 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/Socket/0
node-02:2002:2100 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [receive] via NET/Socket/0
node-01:1001:1100 [0] NCCL INFO comm 0x55d1c0 rank 0 nranks 2 cudaDev 0 busId 1a000 - Init COMPLETE
"""


def _write(tmp_path: Path, text: str, name: str = "train.log") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize("relative", MEGATRON_LOGS)
def test_real_megatron_deepspeed_logs_one_node_eight_gpus_over_p2p(relative):
    scan = scan_nccl([real_log(relative)])
    assert scan.version == "2.10.3"
    assert len(scan.hosts) == 1 and scan.hosts[0].startswith("azwus2f200000")
    assert scan.nranks == 8
    assert scan.transports == (("P2P/IPC/read", 720),)  # 8 ranks × 24 channels, rings and trees
    assert scan.networks == ("IBext",) and scan.ib_devices is True
    assert "mlx5_ib0:1/IB/SHARP" in scan.ib_evidence.text
    assert scan.warnings_total == 0 and scan.timeouts == () and not scan.partial
    assert scan.transport_lines[0].text.endswith("via P2P/IPC/read") and scan.transport_lines[0].line > 600
    analysis = analyze_nccl(scan)
    assert analysis.transport_kinds == {"P2P": 720} and analysis.hosts == 1 and analysis.findings == ()


def test_real_megatron_deepspeed_diagnosis_carries_the_nccl_scan():
    path = real_log(MEGATRON_LOGS[1])
    logs = tanalyze.load(path, cache=False)
    info = next(iter(logs.runs.values()))
    assert info.nccl is not None and info.to_dict()["nccl"]["transports"] == {"P2P/IPC/read": 720}
    diagnosis = next(iter(tanalyze.diagnose(logs).values()))
    assert diagnosis.to_dict()["nccl"]["transport_kinds"] == {"P2P": 720}


def test_a_log_without_nccl_lines_gives_none(tmp_path):
    assert scan_nccl([_write(tmp_path, "step 1 loss 2.0\nstep 2 loss 1.9\n")]) is None
    assert scan_nccl([tmp_path / "missing.log"]) is None


@pytest.mark.parametrize("via, kind", [
    ("P2P/IPC/read", "P2P"), ("P2P/CUMEM/read", "P2P"), ("P2P/direct pointer", "P2P"), ("SHM/direct/direct", "SHM"),
    ("NET/IB/0/GDRDMA", "NET/IB"), ("NET/IBext/0", "NET/IB"), ("NET/Socket/0", "NET/Socket"),
    ("NET/AWS Libfabric/0", "NET/AWS Libfabric"), ("COLLNET", "COLLNET"),
])
def test_transport_classes(via, kind):
    assert transport_class(via) == kind


def test_sockets_where_ib_was_found_is_a_warning(tmp_path):
    scan = scan_nccl([_write(tmp_path, SOCKET_TWO_NODES)])
    assert scan.hosts == ("node-01", "node-02") and scan.nranks == 2
    assert scan.transports == (("NET/Socket/0", 4),) and scan.networks == ("Socket",) and scan.ib_devices is True
    (finding,) = analyze_nccl(scan).findings
    assert finding.code == "nccl_slow_transport" and finding.severity == Severity.WARNING
    assert "4 of 4 NCCL connections go through TCP sockets" in finding.message
    assert "fell back to sockets where IB was available" in finding.message
    assert finding.evidence["ib_line"]["line"] == 2


def test_sockets_without_an_ib_device_is_information(tmp_path):
    text = SOCKET_TWO_NODES.replace("NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ; OOB eth0:10.0.0.1<0>",
                                    "NET/IB : No device found.")
    (finding,) = analyze_nccl(scan_nccl([_write(tmp_path, text)])).findings
    assert finding.severity == Severity.INFO and "no InfiniBand/RoCE device" in finding.message


def test_sockets_when_the_log_does_not_say_about_ib(tmp_path):
    text = "\n".join(line for line in SOCKET_TWO_NODES.splitlines() if "NET/IB" not in line)
    scan = scan_nccl([_write(tmp_path, text)])
    assert scan.ib_devices is None
    (finding,) = analyze_nccl(scan).findings
    assert finding.severity == Severity.WARNING and "does not say whether InfiniBand/RoCE was available" in finding.message


def test_using_network_socket_on_one_host_is_not_a_finding(tmp_path):
    text = ("gpu-a:11:11 [0] NCCL INFO Using network Socket\n"
            "gpu-a:11:20 [0] NCCL INFO Channel 00/02 : 0[0] -> 1[1] via P2P/CUMEM/read\n"
            "gpu-a:12:21 [1] NCCL INFO Channel 00/02 : 1[1] -> 0[0] via P2P/CUMEM/read\n")
    assert analyze_nccl(scan_nccl([_write(tmp_path, text)])).findings == ()


def test_one_host_over_shared_memory_only(tmp_path):
    text = ("[2026-05-05 06:16:47] gpu-a:11:20 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via SHM/direct/direct\n"
            "[2026-05-05 06:16:47] gpu-a:12:21 [1] NCCL INFO Channel 00/0 : 1[1] -> 0[0] via SHM/direct/direct\n")
    (finding,) = analyze_nccl(scan_nccl([_write(tmp_path, text)])).findings
    assert finding.code == "nccl_slow_transport" and finding.severity == Severity.INFO
    assert "host gpu-a go through shared memory" in finding.message


def test_watchdog_timeouts_name_the_rank_the_collective_and_the_silent_rank(tmp_path):
    text = (
        "gpu-a:11:20 [0] NCCL INFO comm 0x7f rank 0 nranks 4 cudaDev 0 busId 1a000 - Init COMPLETE\n"
        "epoch 1 step 200 loss 1.2\n"
        "[rank0]:[E321 02:07:08.408271257 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught collective operation "
        "timeout: WorkNCCL(SeqNum=1580, OpType=ALLREDUCE, NumelIn=466119168, NumelOut=466119168, Timeout(ms)=600000) "
        "ran for 600060 milliseconds before timing out.\n"
        "[rank2]:[E321 02:07:08.432379535 ProcessGroupNCCL.cpp:607] [Rank 2] Watchdog caught collective operation "
        "timeout: WorkNCCL(SeqNum=1580, OpType=ALLREDUCE, NumelIn=466119168, NumelOut=466119168, Timeout(ms)=600000) "
        "ran for 600067 milliseconds before timing out.\n"
        "[E ProcessGroupNCCL.cpp:737] [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1580, "
        "OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600211 milliseconds before timing out.\n")
    path = _write(tmp_path, text)
    scan = scan_nccl([path])
    assert [(t.rank, t.op, t.seq, t.timeout_ms, t.ran_ms) for t in scan.timeouts] == [
        (0, "ALLREDUCE", 1580, 600000.0, 600060.0), (2, "ALLREDUCE", 1580, 600000.0, 600067.0),
        (3, "ALLREDUCE", 1580, 600000.0, 600211.0)]
    assert scan.timeouts[0].evidence.line == 3
    analysis = analyze_nccl(scan)
    assert analysis.timed_out_ranks == (0, 2, 3) and analysis.silent_ranks == (1,)
    (finding,) = analysis.findings
    assert finding.code == "nccl_timeout" and finding.severity == Severity.ERROR
    assert finding.message == ("A collective timed out: ranks 0, 2, 3 waited in ALLREDUCE (SeqNum 1580) after 600 s "
                               "(timeout 600 s); rank 1 of 4 reported none: the rank that never joined is likely "
                               "among them.")
    # the run-status scanner reads the same failure pattern from the same place
    assert run_status([str(path)]).status == "nccl_timeout"


def test_nccl_warn_lines_with_the_documented_time_stamp_and_source_location(tmp_path):
    text = ("[2026-05-05 06:16:47] node-01:189884:189884 [3] plugin/net.cc:334 NCCL WARN Failed to initialize any "
            "NET plugin\n")
    scan = scan_nccl([_write(tmp_path, text)])
    assert scan.warnings_total == 1 and scan.hosts == ("node-01",)
    assert scan.warnings[0].text == "node-01:189884:189884 [3] plugin/net.cc:334 NCCL WARN Failed to initialize any NET plugin"
    (finding,) = analyze_nccl(scan).findings
    assert finding.code == "nccl_warnings" and "Failed to initialize any NET plugin" in finding.message


def test_the_scan_is_bounded_to_the_head_and_the_tail(tmp_path, monkeypatch):
    monkeypatch.setattr(nccl_module, "HEAD_BYTES", 4096)
    monkeypatch.setattr(nccl_module, "TAIL_BYTES", 2048)
    head = "gpu-a:11:20 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC\n"
    middle = "gpu-a:11:20 [0] NCCL INFO Channel 01/0 : 0[0] -> 1[1] via NET/Socket/0\n"
    filler = "iteration line that is not NCCL's, padding the log out\n" * 200
    tail = ("[Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7, OpType=BROADCAST, NumelIn=1, "
            "NumelOut=1, Timeout(ms)=1800000) ran for 1800513 milliseconds before timing out.\n")
    scan = scan_nccl([_write(tmp_path, head + filler + middle + filler + tail)])
    assert scan.partial is True
    assert scan.transports == (("P2P/IPC", 1),)  # the socket line in the middle was not read
    (timeout,) = scan.timeouts
    assert (timeout.rank, timeout.op, timeout.seq, timeout.evidence.line) == (1, "BROADCAST", 7, None)


def test_untrusted_lines_are_kept_as_text_and_cut(tmp_path):
    line = "gpu-a:11:20 [0] NCCL WARN <script>alert(1)</script>" + "x" * 500 + "\n"
    scan = scan_nccl([_write(tmp_path, line)])
    assert scan.warnings[0].text.startswith("gpu-a:11:20 [0] NCCL WARN <script>") and len(scan.warnings[0].text) < 260


def test_newer_init_lines_give_ranks_and_nodes_and_socket_between_nodes_counts(tmp_path):
    """NCCL ≥ 2.19 prints 'comm 0x… rank 0 nRanks 16 nNodes 2 localRanks 8 …'; a per-node log shows one host."""
    text = ("node-01:7:7 [0] NCCL INFO NET/IB : No device found.\n"
            "node-01:7:7 [0] NCCL INFO Using network Socket\n"
            "node-01:7:30 [0] NCCL INFO comm 0x5581 rank 0 nRanks 16 nNodes 2 localRanks 8 localRank 0 MNNVL 0\n")
    scan = scan_nccl([_write(tmp_path, text)])
    assert (scan.nranks, scan.nodes, scan.hosts) == (16, 2, ("node-01",))
    (finding,) = analyze_nccl(scan).findings
    assert finding.code == "nccl_slow_transport" and finding.severity == Severity.INFO
    assert finding.message.startswith("NCCL chose the Socket network for a job on 2 nodes")
