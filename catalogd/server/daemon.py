"""Daemon wiring: start-up, main loop, graceful shutdown (uvicorn's shape).

Exit codes: EXIT_OK after a clean shutdown; a start-up failure raises a
CatalogError whose ``exit_code`` the CLI uses (2 for config errors, else 1).
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import logging
import os
import shutil
import signal
import socket
import sys
import threading
from collections.abc import Collection
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from catalogd import __version__, ratelog
from catalogd.auth.audit import AuditLog, audit_path
from catalogd.auth.model import Authority
from catalogd.auth.throttle import Throttle
from catalogd.catalog.hms_cache import MetadataCache
from catalogd.config import Config, load_config
from catalogd.datadir import DataDirLock
from catalogd.dynamic.service import DynamicTables
from catalogd.errors import CatalogError, ConfigError, ConflictError
from catalogd.gen.catalogd_thrift import CatalogService
from catalogd.hms.endpoint import HmsEndpoint
from catalogd.manager import CatalogManager, ServedEndpoint
from catalogd.metastore.embedded import EmbeddedMetastore, port_free
from catalogd.model import CatalogInfo, ClusterStatus, ReloadResult
from catalogd.server.access import Access
from catalogd.server.cache_peers import CachePeers
from catalogd.server.cluster_status import cluster_status
from catalogd.server.console.app import ConsoleSources
from catalogd.server.forwarding import LeaderForwarding
from catalogd.server.handler import CatalogHandler
from catalogd.server.heap import freeze_startup_heap
from catalogd.server.http import HttpServer
from catalogd.server.janitor import Janitor
from catalogd.server.leader import Leadership
from catalogd.server.metrics import Metrics
from catalogd.server.overview import HealthSources
from catalogd.server.thrift_server import ThriftServer
from catalogd.stage_key import check_stage_key
from catalogd.tls import server_context

if TYPE_CHECKING:
    from catalogd.iceberg.door import IcebergDoor

logger = logging.getLogger(__name__)

EXIT_OK = 0
HANDLED_SIGNALS = (signal.SIGINT, signal.SIGTERM)
RELOAD_SIGNAL = signal.SIGHUP


def check_ports(config: Config, held: Collection[int] = ()) -> None:
    """Fail if a port the daemon is configured to listen on is taken (the Thrift and HTTP ports,
    the fixed ports of embedded metastores); 0 means any free port and is not checked, nor are
    the ``held`` ones (bound by this daemon already).

    Raises:
        ConfigError: naming each port in use and the key that sets it.
    """
    server = config.server
    wanted = [(server.host, server.port, "server.port"), (server.host, server.http_port, "server.http-port"),
              (server.host, server.hms_port, "server.hms-port")]
    wanted += [(EmbeddedMetastore.host, c.metastore_port, f"catalogs[{c.name}].metastore-port")
               for c in config.catalogs if c.is_embedded]
    problems = [f"{config.source}: {key}: port {port} on {host} is already in use (is another daemon running?)"
                for host, port, key in wanted if port and port not in held and not port_free(host, port)]
    if problems:
        raise ConfigError("; ".join(problems))


def _is_loopback(host: str) -> bool:
    """Whether ``host`` is only reachable from this machine (a name counts when all its addresses are)."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        pass
    try:
        addresses = {info[4][0] for info in socket.getaddrinfo(host, None)}
    except OSError:
        return False
    return bool(addresses) and all(ipaddress.ip_address(str(a).split("%")[0]).is_loopback for a in addresses)


def check_insecure(config: Config) -> None:
    """Refuse to serve every caller as everyone on a network: auth off on a non-loopback host.

    Raises:
        ConfigError: ``server.host`` is not loopback, ``auth.enabled`` is false and
            ``auth.allow-insecure`` does not allow it.
    """
    auth = config.auth
    if auth.enabled or auth.allow_insecure or _is_loopback(config.server.host):
        return
    raise ConfigError(f"{config.source}: server.host: {config.server.host} is reachable from other machines and "
                      "auth.enabled is false: anyone reaching a port could do everything; enable auth, bind "
                      "to 127.0.0.1, or set auth.allow-insecure: true to accept that")


#: Where the CLI and ``CatalogClient`` look when no server is given.
DEFAULT_SERVER = "localhost:9190"


def _local(host: str) -> str:
    """An address this machine reaches a server listening on ``host`` at."""
    return "127.0.0.1" if host in ("0.0.0.0", "::", "") else host


def _public(host: str) -> str:
    """An address other machines reach a server listening on ``host`` at (Spark executors,
    containers beside this one): the host name when it listens on every interface."""
    return socket.gethostname() if host in ("0.0.0.0", "::", "") else host


def next_steps(address: str, http_address: str, catalogs: list[CatalogInfo],
               prefix: str | None = None, on_path: str | None = None, https: bool = False) -> str:
    """The line printed once the daemon is ready: how to reach it from the CLI, Spark and HTTP.

    Args:
        address: the Thrift ``host:port`` clients use.
        http_address: the HTTP ``host:port``.
        catalogs: the served catalogs (Spark is shown for the default one if it is a hive
            catalog, else the first hive catalog).
        prefix: the Python environment the daemon runs in (default ``sys.prefix``).
        on_path: where ``catalogd`` is found on PATH (default: looked up).
    """
    prefix = sys.prefix if prefix is None else prefix
    on_path = shutil.which("catalogd") if on_path is None else on_path
    command = "catalogd"
    if address not in (DEFAULT_SERVER, f"127.0.0.1:{DEFAULT_SERVER.split(':')[1]}"):
        command += f" --server {address}"
    activate = Path(prefix) / "bin" / "activate"
    # `make run` starts the daemon from the venv without activating it: a second terminal
    # needs the activation before `catalogd` is found.
    own = Path(prefix) / "bin" / "catalogd"
    if activate.is_file() and (not on_path or Path(on_path).resolve() != own.resolve()):
        shown = activate
        with contextlib.suppress(ValueError, OSError):
            shown = activate.relative_to(Path.cwd())
        cli = f". {shown}; {command} catalog list"
    else:
        cli = f"{command} catalog list"
    parts = [f"CLI: {cli}"]
    hive = [c for c in catalogs if c.type == "hive"]
    spark = next((c for c in hive if c.default), hive[0] if hive else None)
    if spark is not None:
        parts.append(f"Spark conf: {command} spark-conf {spark.name}")
    scheme = "https" if https else "http"
    parts.append(f"HTTP: {scheme}://{http_address}/healthz")
    parts.append(f"Console: {scheme}://{http_address}/ui")
    return "catalogd is ready. " + "  |  ".join(parts)


class Daemon:
    """One catalogd process: catalogs, the Thrift server and the HTTP server.

    Args:
        config: the configuration.
        hms_listener: the HMS endpoint's socket, already listening on ``server.hms-port``
            (``catalogd.hms.listener.listen_early``): clients that connect while the daemon
            starts are answered once it is ready. The daemon owns it (closes it if the start fails).
    """

    def __init__(self, config: Config, hms_listener: socket.socket | None = None) -> None:
        self.config = config
        self._hms_listener = hms_listener
        self.lock = DataDirLock(config.server.data_dir)
        #: The one metadata cache: the hive catalogs (Thrift API) and the HMS endpoint read through it.
        self.cache = MetadataCache.from_config(config.cache)
        self.manager = CatalogManager(config, cache=self.cache)
        # Catalogs on one metastore (e.g. a read-only view of another's) see each other's writes at once.
        self.cache.share(self.manager.catalogs_sharing)
        self.metrics = Metrics()
        self.metrics.watch_cache(self.cache.stats)
        self.thrift: ThriftServer | None = None
        self.http: HttpServer | None = None
        #: A cluster's cache coherence (made at start-up, once the stage key can be read).
        self.peers: CachePeers | None = None
        self.hms: HmsEndpoint | None = None
        self.iceberg: IcebergDoor | None = None
        self.authority = Authority.from_config(config)
        throttle = config.auth.throttle
        #: One back-off for every port: a guesser gains nothing by moving to another.
        self.throttle = Throttle(free=throttle.free_attempts, base=throttle.base_delay.total_seconds(),
                                 max_delay=throttle.max_delay.total_seconds(),
                                 forget=throttle.forget_after.total_seconds())
        #: Opened at start-up, once the data dir is ours.
        self.audit: AuditLog | None = None
        cluster = config.cluster
        member = cluster.own(config.server.port, config.server.hms_port, config.server.http_port)
        #: Who does the background work: this daemon alone, or (a cluster) the member holding the
        #: lease, once ``startup`` attached it to the shared metastore.
        self.leadership = Leadership(None, member.address if member is not None else self._address(),
                                     cluster.lease.total_seconds(), on_change=self._lead)
        self.janitor = Janitor(self.manager, config.staging.janitor_interval.total_seconds(),
                               fence=self.leadership.is_leader)
        janitor = self.janitor
        self.metrics.watch_janitor(lambda: janitor.passes)
        self.forwarding = LeaderForwarding(self.leadership, config, self._address) if member is not None else None
        self.dynamic = DynamicTables(self.manager, config, self._address, authority=self.authority,
                                     leading=self.leadership.is_leader, leader=self.forwarding)
        self.metrics.watch_dynamic_tables(self.dynamic.lags)
        self.metrics.watch_refresh_queue(self.dynamic.queue_stats)
        forwarding = self.forwarding
        self.metrics.watch_leader(self.leadership.status,
                                  (lambda: forwarding.forwarded) if forwarding is not None else None)
        self.should_exit = threading.Event()
        self.reload_requested = threading.Event()
        self._saved_handlers: dict[int, Any] = {}

    # ------------------------------------------------------------ phases

    def startup(self) -> None:
        """Lock the data dir, open the catalogs, bind both ports. Undoes itself on failure."""
        server = self.config.server
        try:
            self.lock.acquire()
        except BaseException as e:
            # Another daemon has the data dir: the port bound early is not ours to serve.
            if self._hms_listener is not None:
                self._hms_listener.close()
                self._hms_listener = None
            if not isinstance(e, OSError):
                raise
            # The config check catches a data dir that is a file; this catches what changed since
            # (or a directory we may not write): a config error naming the key, not a traceback.
            raise ConfigError(f"{self.config.source}: server.data-dir: cannot use {str(server.data_dir)!r} as "
                              f"the data dir: {e.strerror or e}") from None
        try:
            check_insecure(self.config)
            # Before any metastore starts (which takes many seconds): a port in use is a config error now.
            check_ports(self.config, held=(self.config.server.hms_port,) if self._hms_listener else ())
            audit = self.config.auth.audit
            self.audit = AuditLog(audit_path(server.data_dir), audit.max_bytes, audit.backups,
                                  denied_max_bytes=audit.denied_max_bytes, denied_backups=audit.denied_backups,
                                  denial_window=audit.denial_window.total_seconds())
            self.manager.open()
            # Before acting on any stage: a daemon whose key differs from its metastore's
            # deployment would take the others' stages for strangers' (and they its own).
            check_stage_key(self.manager, self.config)
            self._join_peers()
            # A cluster: background work only on the member holding the lease (not yet elected).
            self._attach_lease()
            # Before serving: finish the commits a crashed daemon left half done.
            self.janitor.run_once(startup=True)
            self.janitor.start()
            manager = self.manager
            access = Access(self.authority, self.audit, lambda: manager.default_catalog, lambda: manager.catalogs(),
                            throttle=self.throttle)
            handler = CatalogHandler(self.manager, self.metrics, reload=self.reload, dynamic=self.dynamic,
                                     access=access, cluster=self.cluster_status)
            tls = server.tls
            # Every port alike: with client-ca a connection must present a certificate it signed (on
            # the HMS endpoint its subject is the connection's principal, auth.certificate-rules).
            api_tls = server_context(tls.cert, tls.key, tls.client_ca) if tls is not None else None
            hms_tls = api_tls
            self.thrift = ThriftServer(CatalogService.Processor(handler), server.host, server.port,
                                       server.max_frame_size, server.workers,
                                       max_connections=server.max_connections,
                                       idle_timeout=server.idle_timeout.total_seconds(),
                                       frame_timeout=server.frame_timeout.total_seconds(),
                                       max_buffered_bytes=server.max_buffered_bytes, ssl_context=api_tls)
            self.hms = HmsEndpoint(self.manager, self.config, drop_dynamic=self.dynamic.drop,
                                   authority=self.authority, audit=self.audit, ssl_context=hms_tls,
                                   throttle=self.throttle)
            self.metrics.watch_auth(self.throttle.stats)
            self.metrics.watch_bounded_logs(ratelog.counts)
            self.metrics.watch_hms_endpoint(self.hms.router.call_counts, self.hms.server.stats,
                                            self.hms.router.rewriting.views.stats)
            try:
                self.thrift.bind()
                listener, self._hms_listener = self._hms_listener, None
                self.hms.bind(listener)
                # A cluster: every member's endpoint, so that Spark's metastore client fails over.
                uri = self.config.cluster.hms_uris or f"thrift://{_public(server.host)}:{self.hms.port}"
                kerberos = self.hms.auth.kerberos
                from catalogd.iceberg.door import IcebergDoor

                self.iceberg = IcebergDoor(self.manager, self.hms.router, self.hms.warehouse_root, access)
                self.http = HttpServer(server.host, server.http_port, self.manager, self.metrics, self.dynamic,
                                       shutdown_grace=server.shutdown_grace.total_seconds(), tls=tls,
                                       access=access, console=self._console_sources(), peers=self.peers,
                                       iceberg=self.iceberg)
                # After the HTTP port is bound (it may be chosen then): the Iceberg REST URI names it.
                host = _public(server.host)
                host = f"[{host}]" if ":" in host else host
                iceberg_uri = f"{'https' if tls is not None else 'http'}://{host}:{self.http.port}/iceberg"
                self.manager.serve_endpoint(ServedEndpoint(uri, tls, kerberos.principal if kerberos else None,
                                                           iceberg_uri))
            except OSError as e:
                raise ConflictError(f"cannot listen on {server.host}: {e.strerror} (is another daemon running?)") from e
            # Before serving, so that a client sees every dynamic table as restored; after
            # binding, so that the jobs started now (catch-up runs) can connect back.
            self.dynamic.start()
            # Before serving: the multi-table commits a dead daemon left half done are finished
            # first, so no reader sees one half moved (``catalogd.iceberg.transactions``).
            self._roll_forward()
            self.thrift.start()
            self.hms.start()
            self.http.start()
            if self.peers is not None:
                self.peers.start()
            # Last: once elected, the forwarded calls and the jobs started can reach this daemon.
            self.leadership.start()
        except BaseException:
            self.shutdown()
            raise
        self._write_state()
        frozen = freeze_startup_heap()
        logger.debug("start-up heap frozen: %d objects the collector no longer walks", frozen)
        logger.info(
            "catalogd %s ready: thrift %s:%d, http %s:%d, hms %s:%d, catalogs %s (config %s)",
            __version__, server.host, self.thrift.port, server.host, self.http.port, server.host, self.hms.port,
            ", ".join(sorted(self.manager.catalogs())), self.config.source,
        )
        # Not a log record: the one line a new user needs next, without a logger's prefix.
        print(next_steps(self._address(), f"{_local(server.host)}:{self.http.port}", self.manager.list_catalogs(),
                         https=server.tls is not None), file=sys.stderr, flush=True)

    def _join_peers(self) -> None:
        """A member of a cluster passes its cache invalidations on to the others (and takes theirs)."""
        if len(self.config.cluster.members) < 2:
            return
        from catalogd.catalog import stage_key

        cache, manager = self.cache, self.manager

        def apply(catalog: str, database: str, table: str) -> None:
            cache.invalidate(catalog, database, table, announce=False)

        self.peers = CachePeers(self.config, stage_key(self.config), apply, lambda: manager.catalogs().keys(),
                                tls=self.config.server.tls)
        self.cache.announce(self.peers.announce)
        self.metrics.watch_cache_peers(self.peers.stats)
        logger.info("cache invalidations go to members %s", ", ".join(self.peers.peers) or "(none: only this one)")

    def cluster_status(self) -> ClusterStatus:
        """Every member (pinged now) and the leader lease, for ``catalogd cluster status``."""
        tls = self.forwarding.tls if self.forwarding is not None else None
        return cluster_status(self.config, self.leadership, tls)

    def _attach_lease(self) -> None:
        """Keep the cluster's leader lease in the metastore of the first writable hive catalog
        (in config order: every member must name the same metastore first)."""
        from catalogd.catalog.hive import HiveCatalog
        from catalogd.catalog.hive_client import HiveSession
        from catalogd.catalog.hive_lease import HmsLeaseStore

        if not self.config.cluster.members:
            return
        catalogs = self.manager.catalogs()
        for conf in self.config.catalogs:
            catalog = catalogs.get(conf.name)
            if isinstance(catalog, HiveCatalog) and not conf.read_only:
                def session(name: str = conf.name, first: HiveCatalog = catalog) -> HiveSession:
                    # The catalog as it is now (a reload may have replaced it); gone: the first one's,
                    # whose calls then fail, and the lease lapses.
                    current = self.manager.catalogs().get(name, first)
                    return current.session if isinstance(current, HiveCatalog) else first.session

                store = HmsLeaseStore(session)
                self.leadership.attach(store)
                logger.info("cluster: the leader lease is kept in catalog %s's metastore (%s); this member is %s",
                            conf.name, store.where, self.leadership.member)
                return
        logger.warning("cluster: no writable hive catalog to keep a leader lease in: this member does its "
                       "background work alone (memory catalogs are per member)")

    def _lead(self, leading: bool) -> None:
        """This member took up or gave up the cluster's background work."""
        self.dynamic.lead(leading)
        if leading:
            self.janitor.wake()
    def _roll_forward(self) -> None:
        assert self.iceberg is not None
        try:
            finished = self.iceberg.roll_forward()
        except Exception:
            logger.exception("Iceberg REST: finishing the multi-table commits left half done failed")
            return
        if finished:
            logger.info("Iceberg REST: finished %d multi-table commit(s) a previous run left half done", finished)

    def _console_sources(self) -> ConsoleSources:
        """What the console and ``GET /v3/health`` read beyond the manager: cache, connections, cluster, audit."""
        assert self.thrift is not None and self.hms is not None
        thrift, hms = self.thrift, self.hms

        def cluster() -> dict[str, Any]:
            # This member's view of the lease (no pings: a health page must not wait on peers).
            status = self.leadership.status()
            return {"members": [m.address for m in self.config.cluster.members], "leader": status.leader,
                    "leading": status.leading, "epoch": status.epoch, "since": status.since,
                    "lease_age": status.lease_age}

        health = HealthSources(ping=self.manager.ping, cache=self.cache.stats,
                               connections={"thrift": thrift.stats, "hms": hms.server.stats}, cluster=cluster)
        return ConsoleSources(health=health, audit_path=audit_path(self.config.server.data_dir),
                              tls=self.config.server.tls is not None)

    def _address(self) -> str:
        """Where jobs reach this daemon's Thrift server."""
        port = self.thrift.port if self.thrift is not None else self.config.server.port
        return f"{_local(self.config.server.host)}:{port}"

    def _write_state(self) -> None:
        assert self.thrift is not None and self.http is not None and self.hms is not None
        state = {"pid": os.getpid(), "host": self.config.server.host, "port": self.thrift.port,
                 "http_port": self.http.port, "hms_port": self.hms.port, "config": self.config.source}
        (self.config.server.data_dir / "catalogd.json").write_text(json.dumps(state) + "\n")

    def main_loop(self) -> None:
        while not self.should_exit.wait(0.25):
            if self.reload_requested.is_set():
                self.reload_requested.clear()
                try:
                    self.reload()
                except CatalogError as e:
                    for line in getattr(e, "problems", None) or [e.message]:
                        logger.error("reload rejected, the running configuration stays: %s", line)

    def reload(self) -> ReloadResult:
        """Re-read the config file and switch catalogs (SIGHUP, or the reloadConfig RPC).

        Raises:
            ConfigError: the file is invalid; nothing changed.
        """
        source = self.config.source
        new = load_config(source)
        # The server section applies at the next start: the running host is the one that counts.
        check_insecure(new.model_copy(update={"server": self.config.server}))
        result = self.manager.reload(new)
        old_auth, new_auth = self.config.auth, self.manager.config.auth
        if (old_auth.kerberos, old_auth.certificate_rules, old_auth.throttle) != (
                new_auth.kerberos, new_auth.certificate_rules, new_auth.throttle):
            logger.warning("auth.kerberos, auth.certificate-rules and auth.throttle changed: they apply at the "
                           "next start (the endpoint's keytab and rules are loaded once)")
        self.authority.reload(self.manager.config)
        self.config = self.manager.config
        # New catalogs get their dynamic tables driven; removed ones let go. Only once the
        # reload is through: a catalog's tables move with it.
        self.dynamic.sync()
        self._write_state()
        return result

    def shutdown(self) -> None:
        logger.info("shutting down")
        # One grace period (server.shutdown-grace) for everything that is waited for.
        grace = self.config.server.shutdown_grace.total_seconds()
        self.janitor.stop(grace)
        self.dynamic.stop()
        # Once this member's background work has stopped (as a daemon's stop always did): the
        # term is released, and another member takes the lead without waiting for the lease.
        self.leadership.stop(grace)
        if self._hms_listener is not None:  # the start failed before the endpoint took it
            self._hms_listener.close()
            self._hms_listener = None
        if self.hms is not None:
            self.hms.shutdown(grace)
        if self.thrift is not None:
            self.thrift.shutdown(grace)
        if self.http is not None:
            self.http.stop()
        if self.iceberg is not None:
            self.iceberg.close()
        if self.peers is not None:
            self.peers.stop()
        self.manager.close()
        if self.audit is not None:
            self.audit.close()
        with contextlib.suppress(OSError):
            (self.config.server.data_dir / "catalogd.json").unlink(missing_ok=True)
        self.lock.release()
        logger.info("stopped")

    # ------------------------------------------------------------ signals

    def _handle_exit(self, sig: int, frame: FrameType | None) -> None:
        logger.info("received %s", signal.Signals(sig).name)
        self.should_exit.set()

    def _handle_reload(self, sig: int, frame: FrameType | None) -> None:
        logger.info("received SIGHUP: reloading %s", self.config.source)
        self.reload_requested.set()

    def install_signal_handlers(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        for sig in HANDLED_SIGNALS:
            self._saved_handlers[sig] = signal.signal(sig, self._handle_exit)
        self._saved_handlers[RELOAD_SIGNAL] = signal.signal(RELOAD_SIGNAL, self._handle_reload)

    def restore_signal_handlers(self) -> None:
        for sig, handler in self._saved_handlers.items():
            signal.signal(sig, handler)
        self._saved_handlers.clear()

    def run(self) -> int:
        """Serve until SIGINT or SIGTERM; return the process exit code.

        Raises:
            CatalogError: start-up failed (nothing is left running).
        """
        self.install_signal_handlers()
        try:
            self.startup()
            self.main_loop()
            self.shutdown()
            return EXIT_OK
        finally:
            self.restore_signal_handlers()
