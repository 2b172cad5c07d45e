"""PySpark side of catalogd: session settings and atomic writes through stages."""

from catalogd.spark.atomic import StagedTable, atomic_ctas, insert_overwrite, sql, staged_table
from catalogd.spark.conf import session_builder, spark_conf_for
from catalogd.spark.functions import register_functions

__all__ = [
    "StagedTable",
    "atomic_ctas",
    "insert_overwrite",
    "register_functions",
    "session_builder",
    "spark_conf_for",
    "sql",
    "staged_table",
]
