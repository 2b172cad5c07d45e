"""Integration tests: a real catalogd daemon, a real embedded Hive Metastore, real Spark."""
