"""A real MIT Kerberos KDC for the tests: Debian's ``krb5kdc`` and ``kadmin.local`` in a temporary directory.

The realm ``CATALOGD.TEST`` lives in its own directory: a ``kdc.conf`` and database there, a
``krb5.conf`` that points clients (through ``KRB5_CONFIG``, and Java's ``java.security.krb5.conf``)
at the KDC on a free port of 127.0.0.1, over TCP and UDP. Principals and their keytabs are made
with ``kadmin.local`` (no admin server needed); tickets with ``kinit -k -t``, each into a cache of
its own.

Started by the session fixture ``kdc`` (tests/integration/conftest.py) only when a test asks for it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from .ports import free_port

REALM = "CATALOGD.TEST"
#: The realm's database is made in a second or two; a busy machine may take longer.
START_TIMEOUT = 60


def kdc_programs() -> dict[str, str] | None:
    """The paths of krb5kdc, kdb5_util, kadmin.local and kinit, or None when one is missing."""
    found: dict[str, str] = {}
    for name in ("krb5kdc", "kdb5_util", "kadmin.local", "kinit"):
        path = shutil.which(name) or next((str(p) for p in (Path("/usr/sbin") / name, Path("/usr/bin") / name)
                                           if p.exists()), None)
        if path is None:
            return None
        found[name] = path
    return found


@dataclass
class Kdc:
    """A running KDC and its realm's files."""

    root: Path
    port: int
    programs: dict[str, str]
    realm: str = REALM
    proc: subprocess.Popen[bytes] | None = None
    principals: set[str] = field(default_factory=set)

    @property
    def krb5_conf(self) -> Path:
        return self.root / "krb5.conf"

    def env(self, ccache: Path | None = None) -> dict[str, str]:
        """The variables a Kerberos client (and the KDC's tools) of this realm runs with."""
        env = {"KRB5_CONFIG": str(self.krb5_conf), "KRB5_KDC_PROFILE": str(self.root / "kdc.conf"),
               "KRB5RCACHETYPE": "none"}
        if ccache is not None:
            env["KRB5CCNAME"] = f"FILE:{ccache}"
        return env

    def _run(self, *args: str) -> str:
        done = subprocess.run(list(args), capture_output=True, text=True, timeout=60,
                              env={**os.environ, **self.env()})
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(args)} failed: {done.stderr or done.stdout}")
        return done.stdout

    def add_principal(self, name: str, keytab: Path | None = None) -> str:
        """Create ``name@REALM`` with a random key; with ``keytab``, export its key there (mode 0600)."""
        full = f"{name}@{self.realm}"
        if full not in self.principals:
            self._run(self.programs["kadmin.local"], "-r", self.realm, "-q", f"addprinc -randkey {full}")
            self.principals.add(full)
        if keytab is not None:
            # -norandkey: exporting must not change the key (tickets already issued stay good).
            self._run(self.programs["kadmin.local"], "-r", self.realm, "-q", f"ktadd -norandkey -k {keytab} {full}")
            os.chmod(keytab, 0o600)
        return full

    def kinit(self, principal: str, keytab: Path, ccache: Path) -> dict[str, str]:
        """A ticket for ``principal`` (from its keytab) in ``ccache``; the environment that uses it."""
        env = self.env(ccache)
        done = subprocess.run([self.programs["kinit"], "-k", "-t", str(keytab), principal], capture_output=True,
                              text=True, timeout=60, env={**os.environ, **env})
        if done.returncode != 0:
            raise RuntimeError(f"kinit {principal} failed: {done.stderr}")
        return env

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def _write_config(root: Path, port: int) -> None:
    (root / "kdc.conf").write_text(f"""[kdcdefaults]
    kdc_ports = {port}
    kdc_tcp_ports = {port}

[realms]
    {REALM} = {{
        database_name = {root}/principal
        key_stash_file = {root}/stash
        acl_file = {root}/kadm5.acl
        max_life = 10h 0m 0s
        max_renewable_life = 7d 0h 0m 0s
        supported_enctypes = aes256-cts-hmac-sha1-96:normal aes128-cts-hmac-sha1-96:normal
    }}

[logging]
    kdc = FILE:{root}/kdc.log
""")
    (root / "kadm5.acl").write_text("")
    (root / "krb5.conf").write_text(f"""[libdefaults]
    default_realm = {REALM}
    dns_lookup_realm = false
    dns_lookup_kdc = false
    rdns = false
    dns_canonicalize_hostname = false
    ignore_acceptor_hostname = true
    udp_preference_limit = 1
    forwardable = true
    default_tkt_enctypes = aes256-cts-hmac-sha1-96 aes128-cts-hmac-sha1-96
    default_tgs_enctypes = aes256-cts-hmac-sha1-96 aes128-cts-hmac-sha1-96
    permitted_enctypes = aes256-cts-hmac-sha1-96 aes128-cts-hmac-sha1-96

[realms]
    {REALM} = {{
        kdc = 127.0.0.1:{port}
    }}

[domain_realm]
    localhost = {REALM}
    .localhost = {REALM}
""")


@contextlib.contextmanager
def running_kdc() -> Iterator[Kdc]:
    """A KDC of the realm ``CATALOGD.TEST`` for the ``with`` block (its directory removed after)."""
    programs = kdc_programs()
    if programs is None:
        raise RuntimeError("MIT Kerberos (krb5-kdc, krb5-user) is not installed: run `make kerberos`")
    root = Path(tempfile.mkdtemp(prefix="catalogd-kdc-"))
    os.chmod(root, 0o700)
    port = free_port()
    _write_config(root, port)
    kdc = Kdc(root, port, programs)
    try:
        kdc._run(programs["kdb5_util"], "create", "-s", "-r", REALM, "-P", os.urandom(12).hex())
        log = open(root / "krb5kdc.out", "wb")  # noqa: SIM115 - the process outlives this block
        kdc.proc = subprocess.Popen([programs["krb5kdc"], "-n", "-r", REALM, "-P", str(root / "kdc.pid")],
                                    stdout=log, stderr=subprocess.STDOUT, env={**os.environ, **kdc.env()},
                                    start_new_session=True)
        log.close()
        deadline = time.monotonic() + START_TIMEOUT
        # Ready when a ticket can be had: make a principal and ask for its ticket.
        probe = root / "probe.keytab"
        kdc.add_principal("probe", probe)
        while True:
            try:
                kdc.kinit(f"probe@{REALM}", probe, root / "probe.ccache")
                break
            except RuntimeError:
                if kdc.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"the KDC did not start: {(root / 'krb5kdc.out').read_text()}") from None
                time.sleep(0.2)
        yield kdc
    finally:
        kdc.stop()
        shutil.rmtree(root, ignore_errors=True)
