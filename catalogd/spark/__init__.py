"""PySpark side of catalogd: session settings (and, later, atomic writes)."""

from catalogd.spark.conf import session_builder, spark_conf_for

__all__ = ["session_builder", "spark_conf_for"]
