"""A real Hive Metastore 2.3 in a child process, from the jars in the pyspark wheel, listening on loopback only.

The metastore keeps its Derby database, warehouse, config and temporary files under
``<data-dir>/catalogs/<catalog>/`` and logs to ``<data-dir>/logs/`` (its output to
``metastore-<catalog>.log``, Hive's own log to ``metastore-<catalog>.hive.log``); a catalog with
``metastore-db`` keeps its data in that PostgreSQL database instead (schema created on
first start), which several daemons' metastores may share.

HMS 2.3 has no bind-host setting: ``HiveMetaStore.main`` listens on every
interface. So the JVM is started with py4j's gateway (pyspark ships both) and
driven through it to do what ``HiveMetaStore.startMetaStore`` does for a plain
metastore, or a secure one (``hive.metastore.sasl.enabled``: Kerberos with
``hive.metastore.kerberos.keytab.file`` and ``hive.metastore.kerberos.principal``),
except that its server socket is bound to 127.0.0.1 and each connection must first send the
key catalogd generated for it (``access_key``; checked by ``jvm/metastore-guard``, before
Thrift or SASL), since any process of the machine may connect to a loopback port. The gateway (authenticated,
on loopback) is shut down once the metastore serves, so nothing but the
metastore's own port stays open. A secure metastore's JVM finds the realm through
``java.security.krb5.conf``, set from the daemon's ``KRB5_CONFIG`` when there is one.
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import shutil
import socket
import subprocess
import time
from collections.abc import Collection
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape

from catalogd.config.metastore_db import PostgresDatabase
from catalogd.errors import ConflictError, MetastoreUnavailableError
from catalogd.metastore import guard_classes, txn_tables
from catalogd.metastore.access_key import KEY_FILE, KeySource, new_key, preamble, send_key
from catalogd.metastore.database import database_settings, driver_jars
from catalogd.metastore.jars import pyspark_jars_dir

logger = logging.getLogger(__name__)

MAIN_CLASS = "org.apache.hadoop.hive.metastore.HiveMetaStore"
SASL_KEY = "hive.metastore.sasl.enabled"
#: On the JVM's command line so that ``ps`` (and the tests) tell a metastore from other JVMs.
ROLE_MARKER = f"-Dcatalogd.role=embedded:{MAIN_CLASS}"
_GATEWAY_CLASS = "py4j.GatewayServer"
_HMS = "org.apache.hadoop.hive.metastore."
#: How long a new connection may take to send its key (catalogd's clients send it at once).
KEY_TIMEOUT_MS = 10_000


def find_java() -> str:
    java_home = os.environ.get("JAVA_HOME")
    candidates = [str(Path(java_home) / "bin" / "java")] if java_home else []
    which = shutil.which("java")
    if which:
        candidates.append(which)
    for candidate in candidates:
        if os.access(candidate, os.X_OK):
            return candidate
    raise MetastoreUnavailableError(
        "Java (17) is needed to run the embedded metastore: install openjdk-17-jre-headless or set JAVA_HOME"
    )


def free_port(host: str = "127.0.0.1", avoid: Collection[int] = ()) -> int:
    """A port free now, not one of ``avoid`` (ports configured for something not yet listening)."""
    for _ in range(100):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind((host, 0))
            port = int(s.getsockname()[1])
        if port not in avoid:
            return port
    raise ConflictError(f"no free port on {host} outside {sorted(avoid)}")


def port_answers(host: str, port: int, timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def port_free(host: str, port: int) -> bool:
    """Whether ``port`` can be listened on at ``host`` now (bound with SO_REUSEADDR, as servers do)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def write_private(path: Path, text: str) -> None:
    """Write a file that may hold secrets: mode 0600 from its creation, replaced in one rename."""
    tmp = path.with_name(f".{path.name}.tmp")
    with contextlib.suppress(FileNotFoundError):
        tmp.unlink()
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def private_dir(path: Path) -> Path:
    """A directory only this user can enter (0700), for files that hold secrets.

    A new one is created with the mode; one left by an older catalogd with a looser mode is tightened.
    """
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    if path.stat().st_mode & 0o077:
        logger.warning("tightening %s to mode 0700: it holds secrets", path)
        path.chmod(0o700)
    return path


class EmbeddedMetastore:
    """Start, wait for and stop one HMS child process.

    Args:
        name: the catalog's name (used for paths and log file names).
        data_dir: the daemon's data dir.
        port: the port to listen on; 0 picks a free one (kept across restarts).
        warehouse: warehouse URI; default ``file://<data-dir>/catalogs/<name>/warehouse``.
        hive_conf: extra ``hive.*`` settings for hive-site.xml.
        database: the PostgreSQL database to keep the metastore's data in; None: Derby under ``home``.
        txn_timeout: seconds a lock (or transaction) lives without a heartbeat (HMS's
            ``hive.txn.timeout``); None: HMS's default (300 s).
    """

    host = "127.0.0.1"

    def __init__(
        self,
        name: str,
        data_dir: Path,
        port: int = 0,
        warehouse: str | None = None,
        hive_conf: dict[str, str] | None = None,
        heap: str = "1g",
        stop_grace: float = 20.0,
        database: PostgresDatabase | None = None,
        txn_timeout: float | None = None,
        reserved: Collection[int] = (),
    ) -> None:
        self.name = name
        #: The daemon's own ports: bound after the metastore starts, so a free port may be one of them.
        self.reserved = tuple(reserved)
        self.stop_grace = stop_grace
        self.data_dir = Path(data_dir)
        self.home = Path(data_dir) / "catalogs" / name
        self.log_path = Path(data_dir) / "logs" / f"metastore-{name}.log"
        #: Hive's own log file (log4j: the metastore's messages and its audit lines, ``ugi=... cmd=...``).
        self.hive_log_path = Path(data_dir) / "logs" / f"metastore-{name}.hive.log"
        self.requested_port = port
        self.port = port
        self.warehouse = warehouse or (self.home / "warehouse").as_uri()
        self.hive_conf = dict(hive_conf or {})
        self.heap = heap
        self.database = database
        self.txn_timeout = txn_timeout
        self._process: subprocess.Popen[bytes] | None = None
        # One key for this object's life (restarts by the supervisor keep it, so do the pools'
        # connections' settings); a new daemon makes a new one: an old copy opens nothing.
        self._key = new_key()

    @property
    def key_path(self) -> Path:
        """The file the key is in (mode 0600, in the private ``conf`` directory), written at each start."""
        return self.home / "conf" / KEY_FILE

    @property
    def key(self) -> KeySource:
        """What catalogd's clients send first on each connection to this metastore."""
        sent = preamble(self._key)
        return lambda: sent

    @property
    def uri(self) -> str:
        return f"thrift://{self.host}:{self.port}"

    @property
    def secure(self) -> bool:
        """Whether it speaks SASL (Kerberos), as ``hive.metastore.sasl.enabled`` says."""
        return self.hive_conf.get(SASL_KEY, "false").strip().lower() == "true"

    @property
    def tmp_dir(self) -> Path:
        """The JVM's ``java.io.tmpdir``: under the catalog's directory, not the machine's /tmp."""
        return self.home / "tmp"

    def hive_site(self) -> str:
        settings = {
            **database_settings(self.database, self.home),
            # Creates the schema in an empty database on first start; an existing one is left as it is.
            "datanucleus.schema.autoCreateAll": "true",
            "hive.metastore.schema.verification": "false",
            "hive.async.log.enabled": "false",
            "hive.metastore.warehouse.dir": self.warehouse,
            # BoneCP (the default) is not in the pyspark jars; HikariCP is.
            "datanucleus.connectionPoolingType": "HikariCP",
            # Spark and catalogd both write table statistics; HMS must not reject them.
            "hive.metastore.disallow.incompatible.col.type.changes": "false",
            # The locks' heartbeat timeout: every metastore on one database should have the same.
            **({"hive.txn.timeout": f"{max(1, round(self.txn_timeout * 1000))}ms"}
               if self.txn_timeout is not None else {}),
            **self.hive_conf,
        }
        if self.secure:
            # Hadoop's login from the keytab happens only with Kerberos on (core-site.xml says so in a cluster).
            settings.setdefault("hadoop.security.authentication", "kerberos")
        props = "\n".join(
            f"  <property><name>{escape(k)}</name><value>{escape(v)}</value></property>"
            for k, v in settings.items()
        )
        return f'<?xml version="1.0"?>\n<configuration>\n{props}\n</configuration>\n'

    def command(self, java: str, jars: Path, guard: Path | None = None) -> list[str]:
        """The JVM's command line: everyone may read it (``ps``), so no secret is on it; they are in hive-site.xml
        and the key file. ``guard``: the folder of the key check's classes.

        Raises:
            ConfigError: ``metastore-db`` names PostgreSQL and its JDBC driver is not installed.
        """
        conf_dir = self.home / "conf"
        extra_jars = "".join(f":{jar}" for jar in driver_jars(self.database, self.name))
        # Java reads no KRB5_CONFIG: a secure metastore gets the realm the daemon's own Kerberos library uses.
        krb5 = [f"-Djava.security.krb5.conf={os.environ['KRB5_CONFIG']}"] if (
            self.secure and os.environ.get("KRB5_CONFIG")) else []
        return [
            java,
            f"-Xmx{self.heap}",
            f"-Dderby.system.home={self.home}",
            # Hive's own log defaults to ${java.io.tmpdir}/${user.name}/hive.log, one file shared by
            # every metastore on the machine and never removed: it goes next to this one's other log
            # (Hive's log4j2 configuration rolls it daily and keeps 30).
            f"-Dhive.log.dir={self.hive_log_path.parent}",
            f"-Dhive.log.file={self.hive_log_path.name}",
            # Whatever else the JVM writes to its temporary directory stays in the catalog's.
            f"-Djava.io.tmpdir={self.tmp_dir}",
            "-Djava.net.preferIPv4Stack=true",
            *krb5,
            ROLE_MARKER,
            "-cp",
            f"{conf_dir}:{jars}/*{extra_jars}{f':{guard}' if guard else ''}",
            _GATEWAY_CLASS,
            # The JVM exits when its stdin closes: when this daemon dies, even by SIGKILL.
            "--die-on-broken-pipe",
            "--enable-auth",
            "0",
        ]

    def start(self, timeout: float = 180.0) -> None:
        """Start the metastore and wait until it answers on its port.

        A restart keeps the port chosen by the first start, so clients (Spark sessions
        too) keep their settings.

        Raises:
            MetastoreUnavailableError: Java is missing, or the process died or
                did not answer within ``timeout`` (the log's tail is in the message).
            ConflictError: the chosen port is taken by another process.
            ConfigError: ``metastore-db`` names PostgreSQL and its JDBC driver is not installed.
        """
        # Before anything is written or started: a missing driver is a set-up problem to report at once.
        jars = pyspark_jars_dir()
        java = find_java()
        # Without its key check the metastore would serve any process of the machine: no start then.
        guard = guard_classes.classes_dir(self.data_dir, jars)
        cmd = self.command(java, jars, guard)
        # hive-site.xml may hold the metastore database's password; the key file holds the key.
        conf_dir = private_dir(self.home / "conf")
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self.tmp_dir.mkdir(exist_ok=True)
        write_private(conf_dir / "hive-site.xml", self.hive_site())
        write_private(self.key_path, self._key + "\n")
        if self.warehouse.startswith("file:"):
            Path(self.warehouse.removeprefix("file://").removeprefix("file:")).mkdir(parents=True, exist_ok=True)
        self.port = self.port or self.requested_port or free_port(self.host, self.reserved)
        if port_answers(self.host, self.port) or not port_free(self.host, self.port):
            raise ConflictError(
                f"port {self.port} for the embedded metastore of catalog {self.name!r} is already in use; "
                "set metastore-port to a free port or 0"
            )
        logger.info(
            "starting embedded metastore for catalog %s on %s:%d, database %s (log: %s)", self.name, self.host,
            self.port, self.database or "Derby", self.log_path,
        )
        deadline = time.monotonic() + timeout
        log = open(self.log_path, "ab")  # noqa: SIM115 - handed to the child, closed below
        try:
            process = subprocess.Popen(
                cmd,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                cwd=self.home,
                start_new_session=True,
            )
        finally:
            log.close()
        self._process = process
        try:
            self._serve(process, deadline)
        except BaseException:
            self.stop(timeout=5.0)
            raise
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise self._died(process)
            if self._answers():
                logger.info("embedded metastore for catalog %s is up at %s (pid %d)", self.name, self.uri,
                            process.pid)
                return
            time.sleep(0.2)
        self.stop()
        raise MetastoreUnavailableError(
            f"embedded metastore of catalog {self.name!r} did not answer within {timeout:.0f}s; see {self.log_path}"
        )

    def _answers(self) -> bool:
        """Whether the port takes a connection (one that sends the key, so the metastore logs no refusal)."""
        try:
            with socket.create_connection((self.host, self.port), timeout=0.5) as sock:
                send_key(sock, self.key)
            return True
        except OSError:
            return False

    def _died(self, process: subprocess.Popen[bytes]) -> MetastoreUnavailableError:
        return MetastoreUnavailableError(
            f"embedded metastore of catalog {self.name!r} exited with code {process.poll()}; "
            f"last log lines ({self.log_path}):\n{self.log_tail()}"
        )

    def _gateway_line(self, process: subprocess.Popen[bytes], deadline: float) -> str:
        """One line the gateway prints on start (its port, then its token); never waits past ``deadline``."""
        assert process.stdout is not None
        line = b""
        fd = process.stdout.fileno()
        while not line.endswith(b"\n"):
            left = deadline - time.monotonic()
            if left <= 0:
                raise MetastoreUnavailableError(f"embedded metastore of catalog {self.name!r}: the JVM did not start")
            readable, _, _ = select.select([fd], [], [], min(left, 1.0))
            if readable:
                chunk = os.read(fd, 1)
                if not chunk:
                    raise self._died(process)
                line += chunk
        return line.decode().strip()

    def _serve(self, process: subprocess.Popen[bytes], deadline: float) -> None:
        """Drive the fresh JVM through its gateway to serve HMS on ``host:port``, then close the gateway."""
        from py4j.java_gateway import GatewayParameters, JavaGateway
        from py4j.protocol import Py4JError, Py4JJavaError

        gateway_port = int(self._gateway_line(process, deadline))
        token = self._gateway_line(process, deadline)
        gateway = JavaGateway(gateway_parameters=GatewayParameters(
            port=gateway_port, auth_token=token, auto_convert=False, read_timeout=max(deadline - time.monotonic(), 1),
        ))
        try:
            jvm = gateway.jvm
            # The gateway printed on stdout; from now on the JVM's output goes to the log, like stderr.
            jvm.java.lang.System.setOut(jvm.java.lang.System.err)
            assert process.stdout is not None
            process.stdout.close()
            _start_thrift_server(gateway, self.host, self.port, self.key_path)
        except Py4JJavaError as e:
            cause = str(e.java_exception.toString()) if e.java_exception is not None else str(e)
            if "Could not create ServerSocket" in cause or "BindException" in cause:
                raise ConflictError(
                    f"port {self.port} for the embedded metastore of catalog {self.name!r} is already in use; "
                    "set metastore-port to a free port or 0"
                ) from None
            raise MetastoreUnavailableError(
                f"embedded metastore of catalog {self.name!r} failed to start: {cause}; "
                f"last log lines ({self.log_path}):\n{self.log_tail()}"
            ) from None
        except Py4JError as e:
            if process.poll() is not None:
                raise self._died(process) from None
            raise MetastoreUnavailableError(
                f"embedded metastore of catalog {self.name!r} failed to start: {e}; see {self.log_path}"
            ) from None
        finally:
            with contextlib.suppress(Exception):
                gateway.shutdown()
            with contextlib.suppress(Exception):
                gateway.close()

    def log_tail(self, lines: int = 15) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process else None

    def wait_exit(self, timeout: float) -> int | None:
        """The exit code once the current process has ended (reaping it), or None if it still runs after
        ``timeout`` seconds or was never started."""
        proc = self._process
        if proc is None:
            time.sleep(timeout)
            return None
        try:
            return proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def stop(self, timeout: float | None = None) -> None:
        """SIGTERM, then SIGKILL after ``timeout`` seconds (default: the stop grace); safe to call twice."""
        if timeout is None:
            timeout = self.stop_grace
        proc = self._process
        if proc is None:
            return
        if proc.poll() is None:
            logger.info("stopping embedded metastore for catalog %s (pid %d)", self.name, proc.pid)
            proc.terminate()
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                logger.warning("embedded metastore pid %d ignored SIGTERM; killing it", proc.pid)
                proc.kill()
                proc.wait()
        if proc.stdin is not None:
            with contextlib.suppress(OSError):
                proc.stdin.close()
        if proc.stdout is not None and not proc.stdout.closed:
            with contextlib.suppress(OSError):
                proc.stdout.close()


def _start_thrift_server(gateway: Any, host: str, port: int, key_file: Path) -> None:
    """``HiveMetaStore.main`` + ``startMetaStore`` (HMS 2.3.10, plain or SASL, no SSL), with the server
    socket on ``host`` and every connection's key checked (from ``key_file``) before its transport.

    The server runs in a Java thread (a ``java.beans.EventHandler`` is the Runnable: no Java
    class of our own is needed, so a JRE is enough).
    """
    jvm = gateway.jvm
    java_class = jvm.java.lang.Class.forName
    hive_conf_class = jvm.org.apache.hadoop.hive.conf.HiveConf
    hive_conf_class.setLoadMetastoreConfig(True)
    conf = hive_conf_class(java_class(_HMS + "HiveMetaStore$HMSHandler"))
    jvm.org.apache.hadoop.hive.common.LogUtils.initHiveLog4j()
    conf_vars = hive_conf_class.ConfVars
    secure = bool(conf.getBoolVar(conf_vars.METASTORE_USE_THRIFT_SASL))
    for setting, wanted in (("HIVE_METASTORE_USE_SSL", False), ("METASTORE_USE_THRIFT_FRAMED_TRANSPORT", False),
                            ("METASTORE_USE_THRIFT_COMPACT_PROTOCOL", False)):
        if bool(conf.getBoolVar(getattr(conf_vars, setting))) != wanted:
            raise MetastoreUnavailableError(
                f"the embedded metastore does not support {getattr(conf_vars, setting).varname}="
                f"{str(not wanted).lower()}"
            )
    # What startMetaStore sets first: HMS then logs each client's address.
    remote = java_class(_HMS + "HiveMetaStore").getDeclaredField("isMetaStoreRemote")
    remote.setAccessible(True)
    remote.setBoolean(None, True)
    made = _create_txn_tables(gateway, conf)
    if made:
        logger.info("embedded metastore: created the transaction and lock tables %s", ", ".join(made))
    max_message = conf.getLongVar(conf_vars.METASTORESERVERMAXMESSAGESIZE)
    min_threads = conf.getIntVar(conf_vars.METASTORESERVERMINTHREADS)
    max_threads = conf.getIntVar(conf_vars.METASTORESERVERMAXTHREADS)
    binary = getattr(jvm.org.apache.thrift.protocol, "TBinaryProtocol$Factory")
    base_handler = getattr(jvm.org.apache.hadoop.hive.metastore, "HiveMetaStore$HMSHandler")(
        "new db based metaserver", conf, False)
    handler = jvm.org.apache.hadoop.hive.metastore.HiveMetaStore.newRetryingHMSHandler(base_handler, conf)
    if secure:
        transport_factory, processor = _secure_transport(gateway, conf, base_handler, handler)
    elif conf.getBoolVar(conf_vars.METASTORE_EXECUTE_SET_UGI):
        transport_factory = getattr(jvm.org.apache.hadoop.hive.thrift, "TUGIContainingTransport$Factory")()
        processor = jvm.org.apache.hadoop.hive.metastore.TUGIBasedProcessor(handler)
    else:
        transport_factory = jvm.org.apache.thrift.transport.TTransportFactory()
        processor = jvm.org.apache.hadoop.hive.metastore.TSetIpAddressProcessor(handler)
    # The key first, whatever comes next: Kerberos alone would let any principal of the realm
    # (every Spark user) call the metastore directly, around catalogd's rules.
    transport_factory = jvm.catalogd.guard.KeyCheckingTransportFactory(transport_factory, str(key_file),
                                                                       KEY_TIMEOUT_MS)
    server_socket = jvm.org.apache.thrift.transport.TServerSocket(jvm.java.net.InetSocketAddress(host, port))
    if conf.getBoolVar(conf_vars.METASTORE_TCP_KEEP_ALIVE):
        server_socket = jvm.org.apache.hadoop.hive.metastore.TServerSocketKeepAlive(server_socket)
    args = getattr(jvm.org.apache.thrift.server, "TThreadPoolServer$Args")(server_socket)
    args.processor(processor).transportFactory(transport_factory).protocolFactory(binary()).inputProtocolFactory(
        binary(True, True, max_message, max_message)).minWorkerThreads(min_threads).maxWorkerThreads(max_threads)
    server = jvm.org.apache.thrift.server.TThreadPoolServer(args)
    # startMetaStore's event handler (an anonymous class): it frees a connection's RawStore when it closes.
    events_class = java_class(_HMS + "HiveMetaStore$3")
    if java_class("org.apache.thrift.server.TServerEventHandler").isAssignableFrom(events_class):
        events = events_class.getDeclaredConstructor(gateway.new_array(jvm.java.lang.Class, 0))
        events.setAccessible(True)
        server.setServerEventHandler(events.newInstance(gateway.new_array(jvm.java.lang.Object, 0)))
    else:  # another HMS build: connections keep their RawStore until the thread is reused
        logger.warning("HMS event handler not found; the embedded metastore runs without it")
    serve = jvm.java.beans.EventHandler.create(java_class("java.lang.Runnable"), server, "serve")
    thread = jvm.java.lang.Thread(serve, "metastore-thrift-server")
    thread.start()
    _start_lock_reaper(gateway, conf)


def _secure_transport(gateway: Any, conf: Any, base_handler: Any, handler: Any) -> tuple[Any, Any]:
    """What ``startMetaStore`` (HMS 2.3.10) does with ``hive.metastore.sasl.enabled``: log in from the
    keytab, start the delegation token manager, and serve through the SASL (GSSAPI, DIGEST-MD5) server.

    Returns:
        (the transport factory, the processor).
    """
    jvm = gateway.jvm
    java_class = jvm.java.lang.Class.forName
    conf_vars = jvm.org.apache.hadoop.hive.conf.HiveConf.ConfVars
    keytab = str(conf.getVar(conf_vars.METASTORE_KERBEROS_KEYTAB_FILE) or "").strip()
    principal = str(conf.getVar(conf_vars.METASTORE_KERBEROS_PRINCIPAL) or "").strip()
    if not keytab or not principal:
        raise MetastoreUnavailableError(f"{SASL_KEY}=true needs hive.metastore.kerberos.keytab.file and "
                                        "hive.metastore.kerberos.principal")
    # Hadoop's login reads whether Kerberos is on from this configuration (hive-site.xml says so).
    jvm.org.apache.hadoop.security.UserGroupInformation.setConfiguration(conf)
    bridge = jvm.org.apache.hadoop.hive.shims.ShimLoader.getHadoopThriftAuthBridge()
    sasl_server = bridge.createServer(keytab, principal)
    tokens = jvm.org.apache.hadoop.hive.thrift.HiveDelegationTokenManager()
    server_mode = getattr(jvm.org.apache.hadoop.hive.thrift, "HadoopThriftAuthBridge$Server$ServerMode").METASTORE
    tokens.startDelegationTokenSecretManager(conf, base_handler, server_mode)
    sasl_server.setSecretManager(tokens.getSecretManager())
    # The handler's delegation-token calls find both in HiveMetaStore's static fields.
    for field, value in (("saslServer", sasl_server), ("delegationTokenManager", tokens), ("useSasl", True)):
        declared = java_class(_HMS + "HiveMetaStore").getDeclaredField(field)
        declared.setAccessible(True)
        if value is True:
            declared.setBoolean(None, True)
        else:
            declared.set(None, value)
    factory = sasl_server.createTransportFactory(jvm.org.apache.hadoop.hive.metastore.MetaStoreUtils
                                                 .getMetaStoreSaslProperties(conf))
    processor = sasl_server.wrapProcessor(getattr(jvm.org.apache.hadoop.hive.metastore.api,
                                                  "ThriftHiveMetastore$Processor")(handler))
    logger.info("embedded metastore in secure mode (SASL, Kerberos principal %s)", principal)
    return factory, processor


def _create_txn_tables(gateway: Any, conf: Any) -> list[str]:
    """Create the missing tables of HMS's transaction manager in the metastore's database (see
    ``txn_tables``); the names of those created (none when all were there).

    Runs in the metastore's JVM on a JDBC connection of its own, with the URL, user and password
    HMS uses (from hive-site.xml), before the metastore serves.
    """
    jvm = gateway.jvm
    conf_vars = jvm.org.apache.hadoop.hive.conf.HiveConf.ConfVars
    url = str(conf.getVar(conf_vars.METASTORECONNECTURLKEY))
    dialect: txn_tables.Dialect
    if url.startswith("jdbc:derby:"):
        dialect = "derby"
    elif url.startswith("jdbc:postgresql:"):
        dialect = "postgres"
    else:  # not a database catalogd sets up (a hand-made ConnectionURL): its owner made the tables
        logger.warning("embedded metastore: not creating transaction tables in a database that is neither "
                       "Derby nor PostgreSQL")
        return []
    connection = jvm.java.sql.DriverManager.getConnection(
        url, conf.getVar(conf_vars.METASTORE_CONNECTION_USER_NAME), conf.getVar(conf_vars.METASTOREPWD))
    try:
        connection.setAutoCommit(False)
        statement = connection.createStatement()
        if dialect == "postgres":
            # Held until the commit: a daemon starting at the same time waits here, then finds the tables.
            statement.execute(f"SELECT pg_advisory_xact_lock({txn_tables.ADVISORY_LOCK_KEY})")
        meta = connection.getMetaData()
        schema = connection.getSchema()
        escape = str(meta.getSearchStringEscape())
        lower = bool(meta.storesLowerCaseIdentifiers())
        made = []
        for table in txn_tables.TABLES:
            name = table.name.lower() if lower else table.name.upper()
            # The name is a LIKE pattern: its underscores must match themselves only.
            found = meta.getTables(None, schema, name.replace("_", escape + "_"), None)
            try:
                exists = bool(found.next())
            finally:
                found.close()
            if not exists:
                for sql in txn_tables.statements(table, dialect):
                    statement.execute(sql)
                made.append(table.name)
        connection.commit()
        return made
    except BaseException:
        with contextlib.suppress(Exception):
            connection.rollback()
        raise
    finally:
        with contextlib.suppress(Exception):
            connection.close()


def _start_lock_reaper(gateway: Any, conf: Any) -> None:
    """Release the locks and transactions whose heartbeats stopped, as HMS's AcidHouseKeeperService does.

    HMS 2.3 times locks out only in ``TxnHandler.performTimeOuts``, which a plain metastore never
    calls (the housekeeper is started with the compactor, and needs Hive's DbTxnManager). This
    calls it every quarter of ``hive.txn.timeout`` (0.5 s .. 60 s), so a lock without heartbeats
    goes between 1 and 1.25 timeouts after its last one. Each metastore on a shared database runs
    one; HMS serializes the passes through its own mutex table.
    """
    jvm = gateway.jvm
    java_class = jvm.java.lang.Class.forName
    conf_vars = jvm.org.apache.hadoop.hive.conf.HiveConf.ConfVars
    milliseconds = jvm.java.util.concurrent.TimeUnit.MILLISECONDS
    timeout = int(conf.getTimeVar(conf_vars.HIVE_TXN_TIMEOUT, milliseconds))
    interval = min(max(timeout // 4, 500), 60_000)
    store = jvm.org.apache.hadoop.hive.metastore.txn.TxnUtils.getTxnStore(conf)
    task = jvm.java.beans.EventHandler.create(java_class("java.lang.Runnable"), store, "performTimeOuts")
    executor = jvm.java.util.concurrent.Executors.newSingleThreadScheduledExecutor()
    executor.scheduleAtFixedRate(task, interval, interval, milliseconds)
