"""PySpark side of catalogd: session settings and atomic writes through stages."""

from catalogd.spark.atomic import atomic_ctas, insert_into, insert_overwrite, read_table, sql
from catalogd.spark.conf import session_builder
from catalogd.spark.functions import register_functions
from catalogd.spark_common import StagedTable, spark_conf_for, staged_table

__all__ = [
    "StagedTable",
    "atomic_ctas",
    "insert_into",
    "insert_overwrite",
    "read_table",
    "register_functions",
    "session_builder",
    "spark_conf_for",
    "sql",
    "staged_table",
]
