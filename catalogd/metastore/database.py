"""The database under an embedded metastore: its settings for hive-site.xml and the JDBC driver's jar.

Derby (in the pyspark jars) is the default, one database per catalog under the data dir;
PostgreSQL is named by ``metastore-db`` and needs its JDBC driver from outside the pyspark
jars: Debian's ``libpostgresql-jdbc-java`` puts it at :data:`POSTGRESQL_JAR`.
"""

from __future__ import annotations

from pathlib import Path

from catalogd.config.metastore_db import PostgresDatabase
from catalogd.errors import ConfigError

__all__ = ["POSTGRESQL_JAR", "database_settings", "driver_jars"]

#: Where Debian's libpostgresql-jdbc-java installs the PostgreSQL JDBC driver.
POSTGRESQL_JAR = Path("/usr/share/java/postgresql.jar")
_PASSWORD_KEY = "javax.jdo.option.ConnectionPassword"


def database_settings(database: PostgresDatabase | None, home: Path) -> dict[str, str]:
    """The hive-site settings for ``database`` (None: Derby in ``home/metastore_db``).

    The password is one of them: they belong in a hive-site.xml only this user can read, never
    on the JVM's command line (``ps`` shows that to everyone).
    """
    if database is None:
        return {
            "javax.jdo.option.ConnectionURL": f"jdbc:derby:;databaseName={home / 'metastore_db'};create=true",
            "javax.jdo.option.ConnectionDriverName": "org.apache.derby.jdbc.EmbeddedDriver",
        }
    settings = {
        # The user and password are settings of their own, not parts of the URL: HMS and
        # DataNucleus log the URL.
        "javax.jdo.option.ConnectionURL": database.jdbc_url,
        "javax.jdo.option.ConnectionDriverName": "org.postgresql.Driver",
        "javax.jdo.option.ConnectionUserName": database.user,
        # A shared database outlives any one daemon: the schema's version is written in it on
        # first start, so that Hive's schematool and other metastores know what it holds.
        "hive.metastore.schema.verification.record.version": "true",
    }
    if database.password is not None:
        settings[_PASSWORD_KEY] = database.password.get_secret_value()
    return settings


def driver_jars(database: PostgresDatabase | None, catalog: str, jar: Path | None = None) -> list[Path]:
    """The jars to add to the metastore's classpath for ``database`` (none for Derby: pyspark has it).

    ``jar`` is where the PostgreSQL driver is (default :data:`POSTGRESQL_JAR`).

    Raises:
        ConfigError: the PostgreSQL driver is not installed (naming the catalog's key and the package).
    """
    if database is None:
        return []
    jar = jar or POSTGRESQL_JAR
    if not jar.is_file():
        raise ConfigError(
            f"catalogs[{catalog}].metastore-db: the PostgreSQL JDBC driver {jar} is missing: "
            "install it (apt-get install libpostgresql-jdbc-java)"
        )
    return [jar]
