"""catalogd: a catalog daemon for Spark data platforms on Hive Metastores."""

__version__ = "0.1.0"
