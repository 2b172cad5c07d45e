"""Runs Iceberg's REST Compatibility Kit (RCK) against a REST catalog URI and reads its results.

The RCK is ``org.apache.iceberg.rest.RESTCompatibilityKitSuite`` of ``iceberg-open-api``'s ``tests``
jar (installed by ``engines/iceberg_rest.py``): Iceberg's ``CatalogTests`` and ``ViewCatalogTests``
through a ``RESTCatalog`` client. It runs here without Gradle, in JUnit's console launcher::

    CATALOG_URI=http://127.0.0.1:PORT/iceberg CATALOG_WAREHOUSE=main [CATALOG_TOKEN=...] \\
    java -Xmx512m -cp <classpath> org.junit.platform.console.ConsoleLauncher execute \\
        --select-class org.apache.iceberg.rest.RESTCompatibilityKitSuite \\
        --config rck.local=false --reports-dir <dir>

``RCKUtils.initCatalogClient`` makes the client's catalog properties from every ``CATALOG_*``
variable (``CATALOG_X__Y_Z`` -> ``x-y.z``), then the JVM's system properties; ``rck.local=false``
keeps the suite's ``RESTServerExtension`` from starting a server of its own on port 8181. The suite's
switches are client properties too (``rck.requires-namespace-create``,
``rck.supports-serverside-retry``, ``rck.overrides-requested-location``, ``rck.supports-names-with-dot``,
``rck.supports-variant``, ``rck.purge-test-namespaces``): given here as ``properties``, or sent by the
server in its ``/v1/config`` defaults. The suite uses the namespaces ``ns``, ``newdb``, ``ns1``,
``ns2``, ``other_ns`` and refuses to start if any exists; it drops them before each test.

The result is read from the launcher's XML reports (``TEST-junit-platform-suite.xml`` for the
suite): aborted tests (a failed ``assumeThat``: a feature the catalog does not claim) and disabled
ones count as skipped.
"""

from __future__ import annotations

import os
import subprocess
import time
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .engines import iceberg_rest

__all__ = ["SUITE", "RckFailure", "RckResult", "parse_report", "run_rck"]

SUITE = "org.apache.iceberg.rest.RESTCompatibilityKitSuite"
#: The whole suite took 35 s against the reference server on a quiet 2-core machine.
TIMEOUT = 900.0
HEAP = "-Xmx512m"
#: Lines of a failure's stack trace kept in :attr:`RckFailure.detail`.
TRACE_LINES = 12


@dataclass(frozen=True)
class RckFailure:
    """One failed RCK test: ``Class.method(...)``, its exception's type and message, and where."""

    name: str
    kind: str
    message: str
    detail: str

    def __str__(self) -> str:
        return f"{self.name}: {self.kind}: {self.message}"


@dataclass
class RckResult:
    passed: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    failed: list[RckFailure] = field(default_factory=list)
    seconds: float = 0.0
    output: str = ""

    @property
    def total(self) -> int:
        return len(self.passed) + len(self.skipped) + len(self.failed)

    def summary(self) -> str:
        return (f"RCK {iceberg_rest.VERSION}: {len(self.passed)} passed, {len(self.failed)} failed, "
                f"{len(self.skipped)} skipped of {self.total} in {self.seconds:.0f}s")

    def report(self) -> str:
        """The summary and every failure, one a paragraph."""
        parts = [self.summary()]
        for failure in self.failed:
            parts.append(f"FAILED {failure}\n{failure.detail}")
        return "\n\n".join(parts)


def _short_class(name: str) -> str:
    return name.rsplit(".", 1)[-1]


def parse_report(path: Path) -> RckResult:
    """The passed, skipped and failed tests of a console launcher's legacy XML report."""
    result = RckResult()
    for case in ET.parse(path).getroot().iter("testcase"):
        name = f"{_short_class(case.get('classname', ''))}.{case.get('name', '')}"
        problem = case.find("failure")
        if problem is None:
            problem = case.find("error")
        if problem is not None:
            trace = (problem.text or "").strip().splitlines()
            result.failed.append(RckFailure(
                name, problem.get("type", ""), problem.get("message", "") or (trace[0] if trace else ""),
                "\n".join(trace[:TRACE_LINES])))
        elif case.find("skipped") is not None:
            result.skipped.append(name)
        else:
            result.passed.append(name)
    return result


def run_rck(uri: str, warehouse: str, workdir: Path, token: str | None = None,
            properties: Mapping[str, str] | None = None, select: list[str] | None = None,
            timeout: float = TIMEOUT, tmpdir: Path | None = None) -> RckResult:
    """Run the RCK against the REST catalog at ``uri`` (warehouse ``warehouse``) in a JVM of its own.

    ``token``: a bearer token the client sends (its ``token`` property); ``properties``: more client
    properties (the ``rck.*`` switches above, ...); ``select``: JUnit selectors instead of the whole
    suite (``method:org.apache.iceberg.rest.RESTCompatibilityKitCatalogTests#testRenameTable``);
    ``tmpdir``: the JVM's ``java.io.tmpdir`` (default ``workdir/tmp``), where the tests' ``@TempDir``
    folders go, some of them asked for as view locations.
    Raises ``RuntimeError`` with the launcher's output when it wrote no report (a JVM that did not
    start, a time-out).
    """
    reports = workdir / "reports"
    reports.mkdir(parents=True, exist_ok=True)
    tmpdir = tmpdir or workdir / "tmp"
    tmpdir.mkdir(parents=True, exist_ok=True)
    catalog = {"uri": uri, "warehouse": warehouse, **(properties or {})}
    if token is not None:
        catalog["token"] = token
    selectors = [f"--select={s}" for s in select] if select else [f"--select-class={SUITE}"]
    command = [
        "java", HEAP, f"-Djava.io.tmpdir={tmpdir}", "-cp", iceberg_rest.classpath(),
        "org.junit.platform.console.ConsoleLauncher", "execute",
        "--disable-banner", "--disable-ansi-colors", "--details=none",
        *selectors, "--config=rck.local=false", f"--reports-dir={reports}",
    ]
    for stale in reports.glob("TEST-*.xml"):
        stale.unlink()
    started = time.monotonic()
    with open(workdir / "launcher.log", "wb") as out:
        # Exit 1 is "some test failed", read from the report; the process group is the JVM alone.
        done = subprocess.run(command, cwd=workdir, stdout=out, stderr=subprocess.STDOUT,
                              stdin=subprocess.DEVNULL, env=iceberg_rest.java_env(catalog),
                              timeout=timeout, check=False)
    output = (workdir / "launcher.log").read_text(errors="replace")
    # One report per test engine: the suite's tests are in the suite engine's, tests selected one
    # by one in Jupiter's; a failed class set-up (@BeforeAll) is reported as its tests' failure.
    found = sorted(reports.glob("TEST-*.xml"))
    if not found:
        raise RuntimeError(f"the RCK wrote no report (exit {done.returncode}):\n{output[-4000:]}")
    result = RckResult()
    for report in found:
        part = parse_report(report)
        result.passed += part.passed
        result.skipped += part.skipped
        result.failed += part.failed
    result.seconds = time.monotonic() - started
    result.output = output
    return result


def main() -> int:
    """``python -m tests.integration.iceberg_rck URI WAREHOUSE [WORKDIR]``: run it, print the report.

    The bearer token, if any, is read from ``$RCK_TOKEN`` (never a command-line argument).
    """
    import sys
    import tempfile

    if len(sys.argv) not in (3, 4):
        print(main.__doc__, file=sys.stderr)
        return 2
    workdir = Path(sys.argv[3]) if len(sys.argv) == 4 else Path(tempfile.mkdtemp(prefix="rck."))
    result = run_rck(sys.argv[1], sys.argv[2], workdir, token=os.environ.get("RCK_TOKEN"))
    print(result.report())
    print(f"(report and launcher output in {workdir})")
    return 1 if result.failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
