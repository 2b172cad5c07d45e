"""The Iceberg REST catalog: catalogd's catalogs under ``/iceberg`` on the HTTP port.

``routes`` (the route table) -> ``door`` (the operations) -> ``tables`` (pyiceberg's
``HiveCatalog`` for one catalog) -> ``loopback`` (its HMS calls answered by the HMS endpoint's
router in-process, as the REST caller) -> the catalogs. ``transactions`` makes multi-table
commits all-or-nothing; ``purge`` deletes a dropped table's own files; ``errors`` speaks the
spec's error model; ``idempotency`` replays the answers of retried mutations; ``client_conf`` is
each client's settings for it (``catalogd iceberg-conf``).
"""
