"""The Hive Metastore endpoint: catalogd serving the ThriftHiveMetastore protocol to every HMS client."""
