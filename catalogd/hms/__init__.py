"""The HMS endpoint: catalogd serves the Hive Metastore Thrift protocol for every catalog."""
