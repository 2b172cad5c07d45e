"""The real engines and metastores the integration tests start (Trino, Flink, Hive's own metastores).

Each is installed from Maven Central or PyPI by ``make engines`` (``python -m
tests.integration.engines``) into one cache folder shared by every checkout
(``$CATALOGD_ENGINES``, by default ``~/.cache/catalogd-engines``): about a gigabyte, downloaded
once per machine. A test whose engine is missing fails with the command that installs it.
"""
