"""How refresh jobs are launched: settings never on the command line."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from polling import wait_until

from catalogd.dynamic import runner


@pytest.fixture
def fake_spark_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A SPARK_HOME whose spark-submit records its arguments and the properties it was given."""
    home = tmp_path / "spark"
    (home / "bin").mkdir(parents=True)
    (home / "jars").mkdir()
    script = home / "bin" / "spark-submit"
    script.write_text('#!/bin/sh\nprintf "%s\\n" "$@" > "$(dirname "$0")/args.txt"\n')
    script.chmod(0o755)
    monkeypatch.setenv("SPARK_HOME", str(home))
    return home


def test_settings_go_to_a_private_file_not_the_command_line(fake_spark_home: Path, tmp_path: Path) -> None:
    conf = {"spark.hadoop.fs.s3a.secret.key": "s3cr3t", "spark.app.weird": "a\\b\nc"}
    proc = runner.launch("local[1]", conf, {"mode": "batch"}, tmp_path / "run")
    assert proc.wait(10) == 0
    args = (fake_spark_home / "bin" / "args.txt").read_text().splitlines()
    assert "s3cr3t" not in " ".join(args)
    props = Path(args[args.index("--properties-file") + 1])
    assert stat.S_IMODE(os.stat(props).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(props.parent).st_mode) == 0o700, "the file that holds secrets is in a private dir"
    tmp_option = f"spark.driver.extraJavaOptions -Djava.io.tmpdir={tmp_path / 'run' / 'tmp'}"
    assert props.read_text().splitlines() == ["spark.hadoop.fs.s3a.secret.key s3cr3t", "spark.app.weird a\\\\b\\nc",
                                              "spark.authenticate true", "spark.driver.bindAddress 127.0.0.1",
                                              "spark.driver.host 127.0.0.1", tmp_option]
    assert args[:2] == ["--master", "local[1]"]
    assert args[-2:] == [str(runner.JOB_SCRIPT), str(tmp_path / "run" / "spec.json")]


@pytest.fixture
def env_recording_spark_home(fake_spark_home: Path) -> Path:
    """``fake_spark_home`` whose spark-submit also records the Spark variables of its environment."""
    script = fake_spark_home / "bin" / "spark-submit"
    script.write_text('#!/bin/sh\nprintf "%s\\n" "$@" > "$(dirname "$0")/args.txt"\n'
                      'env | grep "^SPARK_LOCAL_IP=" > "$(dirname "$0")/env.txt"\nexit 0\n')
    return fake_spark_home


def _props(run: Path) -> dict[str, str]:
    return dict(line.split(" ", 1) for line in (run / "spark.properties").read_text().splitlines())


@pytest.mark.parametrize("master", ["local", "local[1]", "local[*]", "local[2, 3]"])
def test_a_local_master_s_job_listens_on_loopback_and_authenticates(env_recording_spark_home: Path, tmp_path: Path,
                                                                    master: str) -> None:
    """Issue 31, row 3: its driver and block manager bind to 127.0.0.1 and ask for Spark's
    authentication (Spark makes the secret itself), whatever spark.conf said; its UI binds to
    SPARK_LOCAL_IP."""
    conf = {"spark.authenticate": "false", "spark.driver.bindAddress": "0.0.0.0", "spark.ui.enabled": "true"}
    proc = runner.launch(master, conf, {"mode": "batch"}, tmp_path / "run")
    assert proc.wait(10) == 0
    props = _props(tmp_path / "run")
    assert {k: props[k] for k in ("spark.authenticate", "spark.driver.bindAddress", "spark.driver.host")} == {
        "spark.authenticate": "true", "spark.driver.bindAddress": "127.0.0.1", "spark.driver.host": "127.0.0.1"}
    assert not any("secret" in key for key in props), "Spark makes a local master's secret; none is written"
    assert (env_recording_spark_home / "bin" / "env.txt").read_text().splitlines() == ["SPARK_LOCAL_IP=127.0.0.1"]


@pytest.mark.parametrize("master", ["spark://head:7077", "local-cluster[2,1,1024]", "yarn", "k8s://https://k:6443"])
def test_another_master_s_job_keeps_the_cluster_s_settings(env_recording_spark_home: Path, tmp_path: Path,
                                                           master: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Executors elsewhere must reach the driver: catalogd adds nothing (docs/security.md)."""
    monkeypatch.delenv("SPARK_LOCAL_IP", raising=False)
    conf = {"spark.authenticate": "true", "spark.driver.host": "head-1"}
    proc = runner.launch(master, conf, {"mode": "batch"}, tmp_path / "run")
    assert proc.wait(10) == 0
    props = _props(tmp_path / "run")
    assert props["spark.driver.host"] == "head-1" and "spark.driver.bindAddress" not in props
    assert (env_recording_spark_home / "bin" / "env.txt").read_text() == ""


def test_a_job_s_temporary_files_go_to_its_directory_not_to_tmp(fake_spark_home: Path, tmp_path: Path) -> None:
    """Spark's local dirs and Hive's ``<uuid>_resources`` follow the driver's java.io.tmpdir; a job
    killed with SIGKILL never removes them, so they live in its directory, emptied at each launch."""
    run = tmp_path / "run"
    (run / "tmp" / "left-by-a-killed-job").mkdir(parents=True, mode=0o700)
    run.chmod(0o700)
    conf = {"spark.driver.extraJavaOptions": "-Djava.security.krb5.conf=/etc/krb5.conf"}
    proc = runner.launch("local[1]", conf, {"mode": "batch"}, run)
    assert proc.wait(10) == 0
    props = dict(line.split(" ", 1) for line in (run / "spark.properties").read_text().splitlines())
    assert props["spark.driver.extraJavaOptions"] == (
        f"-Djava.io.tmpdir={run / 'tmp'} -Djava.security.krb5.conf=/etc/krb5.conf")  # the job's own option last
    assert list((run / "tmp").iterdir()) == []
    assert stat.S_IMODE(os.stat(run / "tmp").st_mode) == 0o700


def test_a_tmp_dir_with_spaces_or_quotes_is_quoted_as_spark_splits_options() -> None:
    conf = runner.with_tmp_dir({}, Path('/data dir/it"s/tmp'))
    assert conf["spark.driver.extraJavaOptions"] == '-Djava.io.tmpdir="/data dir/it\\"s/tmp"'


def test_a_run_dir_open_to_others_is_refused(fake_spark_home: Path, tmp_path: Path) -> None:
    work = tmp_path / "run"
    work.mkdir(mode=0o755)
    work.chmod(0o755)
    with pytest.raises(OSError, match="open to other users"):
        runner.launch("local[1]", {"spark.secret": "x"}, {"mode": "batch"}, work)
    assert not (work / "spark.properties").exists()


def test_stop_ends_the_whole_process_group(fake_spark_home: Path, tmp_path: Path) -> None:
    script = fake_spark_home / "bin" / "spark-submit"
    # A job that ignores SIGTERM and has a child: both must go.
    script.write_text("#!/bin/sh\ntrap '' TERM\nsleep 60 &\nwait\n")
    proc = runner.launch("local[1]", {}, {"mode": "batch"}, tmp_path / "run")
    runner.stop(proc, grace=0.5)
    wait_until(lambda: proc.poll() is not None, 60.0, "the job to end")
    # The child is killed too; on a busy machine it may take a moment to be reaped.
    wait_until(lambda: not _group_exists(proc.pid), 60.0, "the job's process group to be gone")
    with pytest.raises(ProcessLookupError):
        os.killpg(proc.pid, 0)


def test_stop_all_stops_several_jobs_within_one_grace(fake_spark_home: Path, tmp_path: Path) -> None:
    script = fake_spark_home / "bin" / "spark-submit"
    script.write_text("#!/bin/sh\ntrap '' TERM\nsleep 60 &\nwait\n")
    procs = [runner.launch("local[1]", {}, {"mode": "batch"}, tmp_path / f"run{n}") for n in range(3)]
    runner.stop_all(procs, grace=0.5)
    wait_until(lambda: all(p.poll() is not None for p in procs), 60.0, "the jobs to end")
    for proc in procs:
        wait_until(lambda p=proc: not _group_exists(p.pid), 60.0, "the jobs' process groups to be gone")


def _group_exists(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True
