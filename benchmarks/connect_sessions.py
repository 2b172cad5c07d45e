#!/usr/bin/env python3
"""What a new Spark Connect session costs a write: Spark's own server against catalogd's.

A ``spark.engine: connect`` run takes a new session of the server each time (its own SQL
settings and temporary views). Spark's ``SparkConnectServer`` also gives every session a class
loader of its own, and Spark caches compiled query code per class loader: a new session's
stages are generated, compiled (Janino) and JIT-compiled again. catalogd's server
(``catalogd.connect.ConnectServer``, ``jvm/connect-server``) keeps every session on one class
loader. This benchmark shows the difference without catalogd in the way.

For each server (Spark's, then catalogd's; one JVM at a time, ``local[2]``, 1 GiB heap): a
parquet source of ``--rows`` rows over three days is written once; then the same one-day
aggregation (the shape of ``benchmarks/dynamic_tables.py``'s refresh) is written as a
dynamic-partition overwrite of parquet files ``--warm`` times in one session (untimed), then
``--rounds`` times alternating between a **new** session (created, written, stopped: what a
run does) and the **same** long-lived session. Each write's wall time is measured from the
client, and the server's JIT compiler threads' CPU seconds during it (from ``/proc``).

    .venv/bin/python benchmarks/connect_sessions.py [--rows 600000] [--warm 8] [--rounds 24] [--output FILE]

Prints one JSON document: per server, the median wall and JIT seconds of the new-session and
the same-session writes, and ``new_vs_same``. Takes about three minutes on a 2-core machine.
"""

from __future__ import annotations

import argparse
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from catalog_ops import report

from catalogd.spark.plugin import CONNECT_SERVER_CLASS, connect_server_jar

SPARK_SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
QUERY = ("SELECT ds, count(*) AS orders, sum(amount) AS total, count(DISTINCT customer) AS customers "
         "FROM parquet.`{source}` WHERE ds = '2024-03-02' GROUP BY ds")
START_TIMEOUT = 180.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _jit_seconds(pid: int) -> float:
    """CPU seconds of the JVM's compiler threads (``C1 CompilerThre``, ``C2 CompilerThre``)."""
    total = 0.0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            if not (task / "comm").read_text().startswith("C"):
                continue
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


class Server:
    """One Spark Connect server JVM of ``main_class`` (from ``jar``, or Spark's own jars)."""

    def __init__(self, main_class: str, jar: Path | None, work: Path) -> None:
        import pyspark

        self.port = _free_port()
        work.mkdir(parents=True)
        submit = Path(pyspark.__file__).parent / "bin" / "spark-submit"
        conf = {"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2",
                "spark.sql.session.timeZone": "UTC", "spark.driver.memory": "1g",
                "spark.connect.grpc.binding.address": "127.0.0.1",
                "spark.connect.grpc.binding.port": str(self.port), "spark.local.dir": str(work / "local"),
                "spark.sql.sources.partitionOverwriteMode": "dynamic"}
        args = [str(submit), "--master", "local[2]", "--class", main_class]
        for key, value in conf.items():
            args += ["--conf", f"{key}={value}"]
        args.append(str(jar) if jar is not None else "spark-internal")
        self.log = open(work / "server.log", "wb")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     start_new_session=True)
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the server {main_class} exited: see {work / 'server.log'}")
            try:
                socket.create_connection(("127.0.0.1", self.port), 1.0).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the server {main_class} did not listen within {START_TIMEOUT:.0f}s") from None
                time.sleep(0.5)
        self.jvm = self._jvm_pid()

    def _jvm_pid(self) -> int:
        """The java process under spark-submit's process group."""
        found = subprocess.run(["pgrep", "-g", str(self.proc.pid), "java"], capture_output=True, text=True)
        pids = [int(p) for p in found.stdout.split()]
        if not pids:
            raise RuntimeError("the server's JVM was not found")
        return pids[0]

    def session(self) -> Any:
        from pyspark.sql.connect.session import SparkSession as RemoteSession

        return RemoteSession.builder.remote(f"sc://127.0.0.1:{self.port}").create()

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, 15)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, 9)
                self.proc.wait()
        self.log.close()


def measure(main_class: str, jar: Path | None, work: Path, rows: int, warm: int, rounds: int) -> dict[str, Any]:
    server = Server(main_class, jar, work)
    try:
        first = server.session()
        source, out = (work / "orders").as_uri(), (work / "out").as_uri()
        (first.sql(f"SELECT id, cast(id % 100000 / 100 AS decimal(10,2)) AS amount, concat('c', id % 5000) AS "
                   f"customer, date_format(date_add(DATE'2024-03-01', cast(id % 3 AS int)), 'yyyy-MM-dd') AS ds "
                   f"FROM range({rows})").repartition(2).write.partitionBy("ds").parquet(source))
        query = QUERY.format(source=source)

        def write(session: Any) -> None:
            (session.sql(query).select("orders", "total", "customers", "ds")
             .write.mode("overwrite").partitionBy("ds").parquet(out))

        for _ in range(warm):
            write(first)
        seen: dict[str, list[tuple[float, float]]] = {"new": [], "same": []}
        for i in range(rounds):
            kind = "new" if i % 2 == 0 else "same"
            session = server.session() if kind == "new" else first
            jit = _jit_seconds(server.jvm)
            began = time.perf_counter()
            write(session)
            wall = time.perf_counter() - began
            seen[kind].append((wall, _jit_seconds(server.jvm) - jit))
            if kind == "new":
                session.stop()
        first.stop()
    finally:
        server.stop()
    result: dict[str, Any] = {"server": main_class}
    for kind, values in seen.items():
        result[kind] = {"wall_s": round(statistics.median(v[0] for v in values), 3),
                        "jit_cpu_s": round(statistics.median(v[1] for v in values), 3),
                        "walls_s": [round(v[0], 3) for v in values]}
    result["new_vs_same"] = round(result["new"]["wall_s"] / result["same"]["wall_s"], 3)
    return result


def run(rows: int, warm: int, rounds: int) -> dict[str, Any]:
    jar = connect_server_jar()
    with tempfile.TemporaryDirectory(prefix="catalogd-bench-connect-sessions-") as tmp:
        spark_s = measure(SPARK_SERVER_CLASS, None, Path(tmp) / "spark", rows, warm, rounds)
        catalogd_s = measure(CONNECT_SERVER_CLASS, jar, Path(tmp) / "catalogd", rows, warm, rounds)
    return {"machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "load": os.getloadavg()},
            "rows": rows, "warm": warm, "rounds": rounds, "spark_server": spark_s, "catalogd_server": catalogd_s,
            "new_session_write_catalogd_vs_spark": round(catalogd_s["new"]["wall_s"] / spark_s["new"]["wall_s"], 3)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=600_000, help="source rows over three days (600000)")
    parser.add_argument("--warm", type=int, default=8, help="untimed writes in one session first (8)")
    parser.add_argument("--rounds", type=int, default=24, help="timed writes, new and same session alternating (24)")
    parser.add_argument("--output", type=Path, default=None, help="also write the JSON result to this file")
    args = parser.parse_args(argv)
    if args.rows < 3 or args.warm < 0 or args.rounds < 2:
        parser.error("--rows must be at least 3, --warm at least 0 and --rounds at least 2")
    return report(lambda: run(args.rows, args.warm, args.rounds), args.output)


if __name__ == "__main__":
    sys.exit(main())
