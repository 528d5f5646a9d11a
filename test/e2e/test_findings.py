"""Findings (report/views/findings.c) on the synthetic runs of
test/fixtures/traces/findings_traces.h: the bad run holds every pathology, the clean run
none. Each expected number follows from the records that header writes."""
import json
import os
import subprocess

import pytest

from conftest import PROFREPORT, TRACES, make_traces



@pytest.fixture(scope="module", autouse=True)
def traces():
    make_traces()


def run(*args):
    return subprocess.run([PROFREPORT] + list(args), capture_output=True, text=True, timeout=60)


def findings(which):
    r = run(os.path.join(TRACES, "findings", which), "--format", "json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)["findings"]


def by_kind(found, kind):
    return [f for f in found if f["kind"] == kind]


def test_bad_run_fires_every_finding_once_with_its_numbers():
    found = findings("bad")
    kinds = sorted({f["kind"] for f in found})
    assert kinds == sorted(["gpu_idle", "sync", "dataloader", "small_kernels", "pageable_copies",
                            "cpu_ops", "memory_peak", "straggler", "overhead"])
    idle = by_kind(found, "gpu_idle")
    assert [round(f["value"], 5) for f in idle] == [0.99202, 0.99402]
    assert idle[0]["evidence"].startswith(
        "device 0 busy 7.98 ms of 1.000 s wall time, idle in 1992 gaps (the longest 200.40 ms); "
        "during them the CPU spent 200.00 ms in 100 CUDA calls")
    assert idle[0]["where"] == "Model.sync_loss (/w/train.py:42): 200.00 ms of CUDA calls in the gaps"
    assert "during them the CPU spent 0 ns in 0 CUDA calls" in idle[1]["evidence"]
    assert idle[1]["where"] == ""
    assert "(rank 0, pid 8000)" in idle[0]["title"] and "(rank 1, pid 8001)" in idle[1]["title"]

    (sync,) = by_kind(found, "sync")
    assert sync["value"] == pytest.approx(0.104)
    assert sync["evidence"].startswith(
        "100 synchronizing calls (cudaDeviceSynchronize, stream and event syncs: 200.00 ms) and "
        "2 blocking copies (8.00 ms) took 208.00 ms of 2.000 s wall time")
    assert ".item() 100" in sync["evidence"]
    assert sync["where"] == "Model.sync_loss (/w/train.py:42): 200.00 ms of them"

    (dl,) = by_kind(found, "dataloader")
    assert dl["value"] == pytest.approx(0.30)
    assert "100 batches waited 300.00 ms of 1.000 s" in dl["evidence"]

    (small,) = by_kind(found, "small_kernels")
    assert small["value"] == 2000.0  # the median, ns
    assert small["evidence"].startswith("3000 kernels, median duration 2.00 us")
    assert small["where"] == "elementwise_kernel launched 3000 times"

    (page,) = by_kind(found, "pageable_copies")
    assert page["value"] == 16 * 1024 * 1024
    assert page["evidence"].startswith("2 copies moved 16.00 MiB")

    (cpu,) = by_kind(found, "cpu_ops")
    assert cpu["value"] == pytest.approx(1e9 / 6e6)
    assert cpu["where"].startswith("op aten::add: 1.000 s self CPU in 2 calls")

    peaks = by_kind(found, "memory_peak")
    assert [f["value"] for f in peaks] == [1020 / 1024, 1020 / 1024]
    assert "peak 1020.00 MiB" in peaks[0]["evidence"] and "of 1.00 GiB" in peaks[0]["evidence"]

    (slow,) = by_kind(found, "straggler")
    assert slow["value"] == pytest.approx(4 / 3)
    assert "rank 0 (pid 8000)" in slow["title"]
    assert "busy 4.00 ms (GPU kernel time) against a median of 3.00 ms over 2 ranks" in \
        slow["evidence"]

    (over,) = by_kind(found, "overhead")
    assert over["value"] == 500
    assert over["title"] == "the profiler dropped 500 events"
    assert "a larger PROF_RING_KB or fewer captured layers" in over["evidence"]  # the setting's name


def test_clean_run_says_nothing_crossed_a_threshold():
    assert findings("clean") == []
    r = run(os.path.join(TRACES, "findings", "clean"))
    assert r.returncode == 0
    # one line, as the HTML page's, that the analysis ran and found nothing
    assert r.stdout.splitlines()[0] == \
        "Findings: nothing crossed a threshold in what these traces hold", r.stdout
    assert "\nFindings\n" not in r.stdout


def test_text_report_starts_with_the_findings():
    r = run(os.path.join(TRACES, "findings", "bad"))
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "Findings"
    assert lines[1] == "  * GPU 0 idle 99.2 % of the time (rank 0, pid 8000)"
    assert "  * host-device syncs take 10.4 % of the time" in lines
    assert "      where: Model.sync_loss (/w/train.py:42): 200.00 ms of them" in lines
    # the tables follow
    assert lines.index("Job") > lines.index("  * the profiler dropped 500 events")


def test_traces_without_the_evidence_say_nothing():
    # The plain GPU trace has kernels (GPU idle 88.7 %), but no syncs, DataLoader, ops,
    # ranks or lost events: only what its records show.
    r = run(os.path.join(TRACES, "gpu", "main.trace"), "--format", "json")
    found = json.loads(r.stdout)["findings"]
    assert [f["kind"] for f in found] == ["gpu_idle"]
    assert found[0]["value"] == pytest.approx(1 - 11300 / 100000)
    # gaps 1000-3000, 4000-12000, 14000-15000, 16000-24000, 30500-41000, 41200-52000,
    # 52500-60000, 60100-101000; CUDA calls inside them: the first cudaMemcpy (1000 ns), two
    # launches and three driver launches (100 each), cudaMemset (100), the last copy (1000)
    assert found[0]["evidence"].startswith(
        "device 0 busy 11.30 us of 100.00 us wall time, idle in 8 gaps (the longest 40.90 us); "
        "during them the CPU spent 2.60 us in 8 CUDA calls")
    assert found[0]["where"] == "Trainer.train_step (/w/train.py:30): 1.20 us of CUDA calls in the gaps"


def test_gpu_idle_of_many_processes_lists_the_idlest_and_sums_up_the_rest(tmp_path):
    """A job of many ranks must not print a GPU-idle finding per rank: 3 listed, then one
    for the rest (here 7 copies of the bad run's rank 0 and its rank 1: 8 idle devices)."""
    import shutil
    for i in range(7):
        shutil.copy(os.path.join(TRACES, "findings", "bad", "rank0.trace"),
                    tmp_path / ("r%d.trace" % i))
    shutil.copy(os.path.join(TRACES, "findings", "bad", "rank1.trace"), tmp_path / "s.trace")
    r = run(str(tmp_path), "--format", "json")
    assert r.returncode == 0, r.stderr
    idle = by_kind(json.loads(r.stdout)["findings"], "gpu_idle")
    assert len(idle) == 4
    # the idlest first (rank 1: 99.402 %), then the rest summed up
    assert [round(f["value"], 5) for f in idle[:3]] == [0.99402, 0.99202, 0.99202]
    assert "(rank 1, pid 8001)" in idle[0]["title"]
    assert idle[3]["title"] == ("GPUs idle 99.2 % of the time (median) on 5 more devices of "
                                "the processes")
    assert idle[3]["evidence"].startswith("5 more devices idle at least 30 % of their "
                                          "process's wall time: from 99.2 % to 99.2 %")
