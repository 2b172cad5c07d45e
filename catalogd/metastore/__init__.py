"""Talking to and running Hive Metastores."""
