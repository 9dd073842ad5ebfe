"""Sweeps that lose no work: points stream to -o FILE, --resume runs only what is missing, a
dead worker's point runs again (local pool and a real Dask cluster), a killed sweep resumes."""

import json
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tlpsim
from tlpsim.pool import run_jobs

EXAMPLE = Path(__file__).resolve().parent.parent / "scenarios" / "t5220-two-switches.toml"
#: Eight points of about half a second each (one core): long enough to kill something
#: while they run, short enough for a 2-core CI.
TAGS = [25, 26, 27, 28, 29, 30, 31, 32]
SET = "endpoint.ex.tags=" + ",".join(map(str, TAGS))


@pytest.fixture(scope="module")
def slow(tmp_path_factory) -> Path:
    """The example scenario, run for 40 ms: a point takes about half a second."""
    path = tmp_path_factory.mktemp("scenario") / "slow.toml"
    path.write_text(EXAMPLE.read_text().replace('duration = "200us"', 'duration = "40ms"'))
    return path


def start_cli(*args: str) -> subprocess.Popen:
    """Starts the CLI in its own process group, its stderr piped, its stdout dropped."""
    return subprocess.Popen(
        [sys.executable, "-m", "tlpsim.cli", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def records(path: Path) -> list[dict]:
    """The point records of a sweep file (its complete lines after the header)."""
    text = path.read_text() if path.exists() else ""
    return [json.loads(line) for line in text.split("\n")[1:-1]]


def wait_for_records(path: Path, n: int, proc: subprocess.Popen) -> None:
    """Waits until ``path`` holds ``n`` point records (fails if the sweep ends first)."""
    deadline = time.monotonic() + 30
    while len(records(path)) < n:
        assert proc.poll() is None, proc.stderr.read()
        assert time.monotonic() < deadline, "no points written"
        time.sleep(0.02)


def pool_workers(pid: int) -> list[psutil.Process]:
    """The sweep's worker processes (spawned children, not multiprocessing's resource tracker)."""
    return [c for c in psutil.Process(pid).children() if "spawn_main" in " ".join(c.cmdline())]


def tags_of(recs: list[dict]) -> list[int]:
    """The swept tags of some records, sorted."""
    return sorted(int(r["point"]["endpoint.ex.tags"]) for r in recs)


def test_killing_a_local_worker_reruns_its_point(tmp_path, slow):
    out = tmp_path / "points.jsonl"
    proc = start_cli("sweep", str(slow), "--set", SET, "--jobs", "2", "-o", str(out))
    wait_for_records(out, 1, proc)
    victim = pool_workers(proc.pid)[0]
    victim.send_signal(signal.SIGKILL)
    _, err = proc.communicate(timeout=60)  # before: stuck at 7 of 8 points for ever
    assert proc.returncode == 0, err
    assert tags_of(records(out)) == TAGS and all("run" in r for r in records(out))


def test_a_killed_sweep_resumes_without_losing_or_repeating_a_point(tmp_path, slow, cli):
    out = tmp_path / "points.jsonl"
    proc = start_cli("sweep", str(slow), "--set", SET, "--jobs", "2", "-o", str(out))
    wait_for_records(out, 2, proc)
    proc.kill()  # SIGKILL: no chance to tidy anything
    proc.wait()
    os.killpg(proc.pid, signal.SIGKILL)  # its orphaned workers
    kept = records(out)
    assert 2 <= len(kept) < len(TAGS)
    again = cli("sweep", str(slow), "--set", SET, "--jobs", "2", "-o", str(out), "--resume", "--format", "csv")
    assert again.returncode == 0, again.stderr
    assert f"tlpsim: {len(kept)} points were already in {out}" in again.stderr
    final = records(out)
    assert tags_of(final) == TAGS  # every point once: the kept ones were not run again
    assert final[: len(kept)] == kept
    # The resumed table is the one an uninterrupted sweep prints.
    straight = tlpsim.sweep(slow, {"endpoint.ex.tags": [str(t) for t in TAGS]}, jobs=2)
    rows = again.stdout.splitlines()[1:]
    assert [float(r.split(",")[2]) for r in rows] == [r["throughput_gbps"] for r in straight.rows]


def test_an_existing_output_is_refused_unless_resumed_or_forced(tmp_path, cli):
    out = tmp_path / "points.jsonl"
    args = ["sweep", str(EXAMPLE), "--set", "endpoint.ex.tags=1,2", "-o", str(out)]
    assert cli(*args).returncode == 0
    proc = cli(*args)
    assert proc.returncode == 2
    assert proc.stderr == (
        f"tlpsim: error: {out} exists: add --resume to run only the points it lacks, or --force to overwrite it\n"
    )
    proc = cli(*args, "--force")
    assert proc.returncode == 0 and tags_of(records(out)) == [1, 2]
    for bad, says in (
        (["--resume", "--force"], "--resume and --force do not go together"),
        (["--set", "pcie.mps=128", "--resume"], "holds a sweep over endpoint.ex.tags, not endpoint.ex.tags, pcie.mps"),
    ):
        proc = cli(*args, *bad)
        assert proc.returncode == 2 and says in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    proc = cli("sweep", str(EXAMPLE), "--set", "pcie.mps=128", "--resume")
    assert proc.returncode == 2 and "--resume needs --output FILE" in proc.stderr
    not_ours = tmp_path / "notes.txt"
    not_ours.write_text("my notes\n")
    proc = cli("sweep", str(EXAMPLE), "--set", "pcie.mps=128", "-o", str(not_ours), "--resume")
    assert proc.returncode == 2 and "is not a tlpsim sweep file" in proc.stderr
    assert not_ours.read_text() == "my notes\n"


def test_resume_drops_a_cut_last_line_and_failed_points_and_runs_them_again(tmp_path):
    out = tmp_path / "points.jsonl"
    values = {"endpoint.ex.tags": [1, 2, 4, 8]}
    whole = tlpsim.sweep(EXAMPLE, values, jobs=1, output=out)
    lines = out.read_text().split("\n")  # header, 4 points, ""
    failed = json.loads(lines[2])
    del failed["run"]
    failed["error"] = "its worker process died (killed by SIGKILL) 2 times"
    # Point 2 failed; point 8 was cut in the middle of its line by a hard kill.
    out.write_text("\n".join([lines[0], lines[1], json.dumps(failed), lines[3], lines[4][:40]]))
    resumed = tlpsim.sweep(EXAMPLE, values, jobs=1, output=out, resume=True)
    assert resumed.reused == 2 and resumed.rows == whole.rows
    assert tags_of(records(out)) == [1, 2, 4, 8] and out.read_text().endswith("\n")
    assert all("run" in r for r in records(out))
    # Resuming a complete file runs nothing and gives the same result.
    assert tlpsim.sweep(EXAMPLE, values, output=out, resume=True).reused == 4
    with pytest.raises(tlpsim.ConfigError, match="another scenario text"):
        tlpsim.sweep(EXAMPLE.read_text() + "\n# edited\n", values, output=out, resume=True)
    with pytest.raises(tlpsim.ConfigError, match="line 3 is not a sweep record"):
        out.write_text("\n".join([lines[0], lines[1], "{not json", lines[3], ""]))
        tlpsim.sweep(EXAMPLE, values, output=out, resume=True)


def die_on_three(x: int) -> int:
    """A job that kills its own worker process when given 3, and raises when given 5."""
    if x == 3:
        os.kill(os.getpid(), signal.SIGKILL)
    if x == 5:
        raise ValueError("five")
    return 10 * x


def test_a_point_whose_worker_always_dies_is_retried_once_then_reported():
    done, failed = {}, {}
    jobs = [(1,), (3,), (2,), (5,), (4,)]
    run_jobs(die_on_three, jobs, 2, 1, done.__setitem__, failed.__setitem__)
    assert done == {0: 10, 2: 20, 4: 40}
    assert failed == {1: "its worker process died (killed by SIGKILL) 2 times", 3: "ValueError: five"}


def test_a_worker_killed_before_its_first_job_costs_that_job_a_try(monkeypatch):
    """The race a sweep under outside kills meets: a fresh worker dies before it takes a job."""
    import tlpsim.pool

    start = tlpsim.pool._Worker.__init__

    def start_then_kill(self, ctx, fn):
        start(self, ctx, fn)
        self.process.kill()
        self.process.join()

    monkeypatch.setattr(tlpsim.pool._Worker, "__init__", start_then_kill)
    done, failed = {}, {}
    run_jobs(die_on_three, [(1,), (2,)], 2, 1, done.__setitem__, failed.__setitem__)
    assert done == {}
    assert failed == {i: "its worker process died (killed by SIGKILL) 2 times" for i in (0, 1)}


def test_points_that_keep_losing_their_worker_fail_with_a_line_each_and_resume(tmp_path, slow, cli):
    out = tmp_path / "points.jsonl"
    proc = start_cli("sweep", str(slow), "--set", "endpoint.ex.tags=31,32", "--jobs", "2", "-o", str(out))
    deadline = time.monotonic() + 30
    while proc.poll() is None and time.monotonic() < deadline:
        for w in pool_workers(proc.pid):  # every worker, as soon as it shows up
            w.send_signal(signal.SIGKILL)
        time.sleep(0.05)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 3, err
    assert err.splitlines() == [
        "tlpsim: sweep point endpoint.ex.tags=31 failed: its worker process died (killed by SIGKILL) 2 times",
        "tlpsim: sweep point endpoint.ex.tags=32 failed: its worker process died (killed by SIGKILL) 2 times",
        f"tlpsim: 2 of 2 points failed; add --resume to run them again (the others are in {out})",
    ]
    assert [r["error"] for r in records(out)] == ["its worker process died (killed by SIGKILL) 2 times"] * 2
    proc = cli("sweep", str(slow), "--set", "endpoint.ex.tags=31,32", "-o", str(out), "--resume")
    assert proc.returncode == 0, proc.stderr
    assert tags_of(records(out)) == [31, 32] and all("run" in r for r in records(out))


def test_ctrl_c_keeps_the_finished_points_and_says_how_to_resume(tmp_path, slow):
    out = tmp_path / "points.jsonl"
    proc = subprocess.Popen(
        [sys.executable, "-m", "tlpsim.cli", "sweep", str(slow), "--set", SET, "--jobs", "2", "-o", str(out)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        start_new_session=True,
    )
    wait_for_records(out, 1, proc)
    os.killpg(proc.pid, signal.SIGINT)  # as a terminal's Ctrl-C: to the workers too
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130
    done = records(out)
    assert 1 <= len(done) < len(TAGS) and err == (
        f"tlpsim: interrupted after {len(done)} of {len(TAGS)} points\n"
        f"tlpsim: the finished points are in {out}; add --resume to run the rest\n"
    )


@pytest.fixture(scope="module")
def dask_cluster():
    """A real Dask scheduler with two worker processes (one thread each) on this machine."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=logging.ERROR
    ) as cluster:
        yield cluster


def test_a_sweep_runs_on_a_dask_scheduler_with_worker_processes(tmp_path, dask_cluster, cli):
    from distributed import Client

    values = {"pcie.mps": [128, 256], "link.sw2-ex.width": [4, 8]}
    local = tlpsim.sweep(EXAMPLE, values)
    with Client(dask_cluster.scheduler_address) as client:
        assert tlpsim.sweep(EXAMPLE, values, client=client).rows == local.rows
    out = tmp_path / "points.jsonl"
    proc = cli(
        "sweep", str(EXAMPLE), "--set", "pcie.mps=128,256", "--set", "link.sw2-ex.width=4,8",
        "--scheduler", dask_cluster.scheduler_address, "-o", str(out), "--format", "json",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert [r["throughput_gbps"] for r in json.loads(proc.stdout)] == [r["throughput_gbps"] for r in local.rows]
    assert len(records(out)) == 4


def test_killing_a_dask_worker_reruns_its_point(tmp_path, slow, dask_cluster):
    from distributed import Client

    out = tmp_path / "points.jsonl"
    with Client(dask_cluster.scheduler_address) as client:
        pids = client.run(os.getpid)
        address = dask_cluster.scheduler_address
        proc = start_cli("sweep", str(slow), "--set", SET, "--scheduler", address, "-o", str(out))
        deadline = time.monotonic() + 30
        while not (busy := [w for w, tasks in client.processing().items() if tasks]):
            assert proc.poll() is None and time.monotonic() < deadline, "no task reached a worker"
            time.sleep(0.02)
        os.kill(pids[busy[0]], signal.SIGKILL)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert tags_of(records(out)) == TAGS and all("run" in r for r in records(out))


DATA = Path(__file__).resolve().parent / "data"


def test_resuming_a_points_file_with_a_run_that_is_not_one_says_which_line(cli, tmp_path):
    # `"run": {}` gave a KeyError traceback; "garbage", [] and {"flows": 5} other ones.
    head, record = (DATA / "bad_sweep_points.jsonl").read_text().splitlines()
    for run in ("{}", '"garbage"', "[]", '{"flows": 5}', '{"flows": [{"name": "x"}], "audit": {"passed": true}}'):
        points = tmp_path / "t.jsonl"
        points.write_text(f"{head}\n{record.replace('{}', run)}\n")
        proc = cli(
            "sweep", str(DATA / "bad_sweep_scenario.toml"), "--set", "workload.reads.outstanding=2,3",
            "-o", str(points), "--resume",
        )  # fmt: skip
        assert proc.returncode == 2, (run, proc.stderr)
        assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr
        assert f"{points} line 2: the run of point" in proc.stderr, proc.stderr


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)
_KEY = "workload.reads.outstanding"
#: A line of a points file: any JSON value, a record of any point, or a record of this
#: sweep's point with any run (some of them whole runs with one field changed).
_LINE = st.one_of(
    _JSON,
    st.builds(lambda p, r: {"point": p, "run": r}, st.dictionaries(st.sampled_from([_KEY, "x"]), _JSON), _JSON),
    st.builds(lambda v, r: {"point": {_KEY: v}, "run": r}, st.sampled_from(["2", 2, "3"]), _JSON),
    st.builds(lambda v, e: {"point": {_KEY: v}, "error": e}, st.sampled_from(["2", "3"]), _JSON),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(_LINE, max_size=4), whole=st.sampled_from([None, "flows", "audit", "bottleneck", "name"]))
def test_resuming_any_json_lines_never_gives_a_traceback(tmp_path, lines, whole):
    scenario = DATA / "bad_sweep_scenario.toml"
    points = tmp_path / "t.jsonl"
    head = (DATA / "bad_sweep_points.jsonl").read_text().splitlines()[0]
    if whole is not None:
        # A real run with one field broken, where the check has to look inside.
        run = tlpsim.run(tlpsim.load_scenario(scenario)).to_dict()
        broken = run["flows"][0] if whole in ("bottleneck", "name") else run
        broken[whole] = lines[0] if lines else None
        lines = [{"point": {_KEY: "2"}, "run": run}, *lines]
    points.write_text(head + "\n" + "".join(json.dumps(v) + "\n" for v in lines))
    try:
        result = tlpsim.sweep(scenario, {_KEY: [2, 3]}, jobs=1, output=points, resume=True, keep_failed=True)
    except tlpsim.ConfigError as e:
        assert "\n" not in str(e) and str(points) in str(e), str(e)
        return
    assert len(result.rows) >= len(result.points)
    json.dumps(result.rows)
