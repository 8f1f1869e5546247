"""The Python package against the real kernel (software events: this
test runs where there is no hardware PMU). Run by
crates/pmx-py/tests/pytest.rs with the freshly built native module."""

import mmap
import os
import shutil
import subprocess
import sys

import pytest

import pmx

PAGE = 4096


def touch_pages(n):
    """n fresh pages, each first touch one minor page fault."""
    m = mmap.mmap(-1, n * PAGE)
    if hasattr(m, "madvise") and hasattr(mmap, "MADV_NOHUGEPAGE"):
        m.madvise(mmap.MADV_NOHUGEPAGE)
    for i in range(n):
        m[i * PAGE] = 1
    m.close()


def online_cpus():
    text = open("/sys/devices/system/cpu/online").read().strip()
    n = 0
    for part in text.split(","):
        a, _, b = part.partition("-")
        n += int(b or a) - int(a) + 1
    return n


def test_stat_counts_a_command():
    # pmx-workload-like known work: python touching 2000 fresh pages.
    code = "import mmap\nm = mmap.mmap(-1, 2000 * 4096)\nfor i in range(2000): m[i * 4096] = 1"
    r = pmx.stat([sys.executable, "-c", code], events=["task-clock", "page-faults"], repeat=2)
    assert list(r.counts) == ["task-clock", "page-faults"]
    assert r.runs == 2 and r.exit_code == 0
    faults = r.counts["page-faults"]
    # The 2000 touches plus the interpreter's own start-up.
    assert faults.value >= 2000, faults
    assert faults.enabled == faults.running > 0
    assert r.counts["task-clock"].unit == "msec"
    assert r.counts["task-clock"].scaled > 0
    d = r.to_dict()
    assert d["counts"]["page-faults"]["value"] == faults.value
    assert r.metrics == {}
    # A command that fails: its exit code.
    assert pmx.stat(["false"], events="task-clock").exit_code == 1


def test_stat_computes_metrics_and_says_why_it_cannot():
    r = pmx.stat(["true"], events=["task-clock", "page-faults"], metrics="page_faults_per_second")
    m = r.metrics["page_faults_per_second"]
    # perf's page-faults "/sec": the faults per second of task-clock.
    c = r.counts
    assert m.unit == "/sec" and m.missing is None
    assert m.value == pytest.approx(c["page-faults"].value / (c["task-clock"].value / 1e9))
    with pytest.raises(pmx.PmxError, match="unknown metric 'nope'"):
        pmx.stat(["true"], metrics="nope")
    with pytest.raises(pmx.PmxError, match="cannot run '/nonexistent/x': command not found"):
        pmx.stat(["/nonexistent/x"])


def test_stat_to_pandas():
    pd = pytest.importorskip("pandas")
    df = pmx.stat(["true"], events=["task-clock", "page-faults"]).to_pandas()
    assert isinstance(df, pd.DataFrame)
    assert list(df.index) == ["task-clock", "page-faults"]


def test_counters_read_the_exact_page_faults():
    c = pmx.Counters(["page-faults", "task-clock"])
    assert c.names == ["page-faults", "task-clock"]
    assert c.reasons == [None, None]
    # Everything once before counting (code and memory the calls need).
    with c:
        touch_pages(1)
    c.read()
    counts = []
    for n in (300, 300):
        before = c.read()["page-faults"].value
        with c:
            touch_pages(n)
        counts.append(c.read()["page-faults"].value - before)
    # Python may fault in a page or two of its own (allocator arenas):
    # the touches are counted, at most a few more.
    assert all(300 <= n <= 310 for n in counts), counts
    r = c.read()
    assert r["task-clock"].value > 0
    assert r["page-faults"].scaled == r["page-faults"].value
    # task-clock in msec, as pmx stat shows it.
    assert r["task-clock"].unit == "msec"
    assert r["task-clock"].scaled == pytest.approx(r["task-clock"].value / 1e6)
    c.reset()
    assert c.read()["page-faults"].value == 0


def test_bad_event_names_raise_with_the_caret_message():
    with pytest.raises(pmx.PmxError) as e:
        pmx.Counters(["page-faults", "page-fautls"])
    msg = str(e.value)
    assert "unknown event 'page-fautls'" in msg
    assert "did you mean 'page-faults'" in msg
    # The caret under the misspelt member.
    assert msg.endswith("\n  page-fautls\n  ^^^^^^^^^^^"), msg
    with pytest.raises(pmx.PmxError, match="unknown event 'nope'"):
        pmx.stat(["true"], events=["nope"])


def test_region_is_the_shared_region_api():
    with pmx.region("py-region"):
        touch_pages(5)
    with pmx.region("py-region"):
        pass
    doc = pmx.region_results()
    assert doc["format"] == "pmx-regions/1"
    mine = [r for r in doc["regions"] if r["name"] == "py-region"]
    assert len(mine) == 1 and mine[0]["calls"] == 2
    with pytest.raises(pmx.PmxError):
        with pmx.region("inner"):
            pmx._pmx.region_end("not-open")


def test_recorder_to_numpy_is_samples_by_cpus_per_handle():
    np = pytest.importorskip("numpy")
    cpus = online_cpus()
    seen = []

    def keep_raw(now, prev):
        seen.append((list(now), list(prev)))
        return now

    rec = pmx.Recorder(interval_ms=5, capacity=4)
    assert rec.add_event("cpu-clock") == 0
    assert rec.add_event("cpu-clock", cpus=[0], transform=keep_raw) == 1
    assert rec.add_event("context-switches", transform="raw") == 2
    rec.start()
    rec.wait()
    assert len(rec) == 4
    a = rec.to_numpy()
    assert a["cpu-clock"].shape == (4, cpus)
    assert a["cpu-clock#2"].shape == (4, 1)
    assert a["context-switches"].shape == (4, cpus)
    assert a["time_ns"].shape == (4,)
    assert a["cpu-clock"].dtype == np.uint64
    assert (a["cpu-clock"] > 0).all()
    # The callable got the raw values: each prev is the previous now.
    assert len(seen) == 4
    for (now, prev), (later_now, later_prev) in zip(seen, seen[1:]):
        assert later_prev == now and later_now[0] >= now[0]
    assert list(a["cpu-clock#2"][:, 0]) == [s[0][0] for s in seen]
    csv = rec.to_csv().splitlines()
    assert csv[0] == "sample,time_s,cpu,cpu-clock,cpu-clock,context-switches"
    assert len(csv) == 1 + 4 * cpus
    with pytest.raises(pmx.PmxError, match="add every handle before the first sample"):
        rec.add_event("cpu-clock")


def test_recorder_msr_needs_the_driver():
    if os.path.exists("/dev/cpu/0/msr"):
        pytest.skip("this machine has the msr driver")
    rec = pmx.Recorder(interval_ms=10, capacity=2)
    with pytest.raises(pmx.PmxError, match=r"modprobe msr"):
        rec.add_msr("IA32_TIME_STAMP_COUNTER", scope="package")


def test_analyze_a_perf_stat_file(tmp_path):
    if shutil.which("perf") is None:
        pytest.skip("no perf to write the stat file")
    path = tmp_path / "stat.csv"
    subprocess.run(
        ["perf", "stat", "-x,", "-o", str(path), "-e", "task-clock,page-faults", "true"],
        check=True,
    )
    doc = pmx.analyze(str(path))
    assert doc["format"] == "perf stat CSV"
    assert doc["events"] == ["task-clock", "page-faults"]
    names = [m["name"] for m in doc["metrics"]]
    assert "page_faults_per_second" in names
    with pytest.raises(pmx.PmxError, match="nope"):
        pmx.analyze(str(path), metrics="nope")
    with pytest.raises(pmx.PmxError, match="no-such-file"):
        pmx.analyze(str(tmp_path / "no-such-file"))


def test_report_rows_of_a_perf_data_file():
    data = os.environ.get("PMX_SHARED_DATA")
    if not data:
        pytest.skip("PMX_SHARED_DATA not set")
    rows = pmx.report(os.path.join(data, "perfdata", "linux-perf-data__sleep.data"))
    # perf report of this file (perf 6.16 recorded it): 7 samples of
    # cycles:Pu, 82.43% in ld-linux-x86-64.so.2 at 0x1570b.
    assert rows[0]["event"] == "cycles:Pu"
    assert rows[0]["dso"] == "ld-linux-x86-64.so.2"
    assert rows[0]["overhead"] == pytest.approx(82.43, abs=0.01)
    assert sum(r["samples"] for r in rows) == 7
