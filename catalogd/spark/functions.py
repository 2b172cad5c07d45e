"""Python functions of a catalog, registered into a SparkSession.

HMS can only hold JVM functions, which Spark loads from the metastore by
itself. catalogd keeps Python functions (``module:function``) in the same place;
``register_functions`` imports each one and registers it as a session UDF so
SQL can call it by its name.
"""

from __future__ import annotations

import importlib
import logging
from typing import TYPE_CHECKING, Any

from catalogd.errors import InvalidArgumentError
from catalogd.model import FunctionLanguage

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from catalogd.client import CatalogClient

logger = logging.getLogger(__name__)


def register_functions(spark: SparkSession, database: str, client: CatalogClient | None = None) -> list[str]:
    """Register every Python function of ``database`` (``catalog.db``) into ``spark``.

    A function that is already a PySpark UDF (``@udf("bigint")``) keeps its return
    type; a plain Python function returns strings. Each is registered under its
    catalog name (``spark.sql("SELECT my_func(x) FROM t")``).

    Returns:
        The names registered, sorted.

    Raises:
        InvalidArgumentError: a module or attribute that cannot be imported (nothing
            of that function is registered; the others are).
    """
    from catalogd.client import CatalogClient

    own = client is None
    client = client or CatalogClient()
    registered: list[str] = []
    problems: list[str] = []
    try:
        for name in client.list_functions(database):
            function = client.get_function(f"{database}.{name}")
            if function.language is not FunctionLanguage.PYTHON:
                continue
            module_name, _, attr = function.class_name.partition(":")
            try:
                target: Any = getattr(importlib.import_module(module_name), attr)
            except (ImportError, AttributeError) as e:
                problems.append(f"{function.qualified_name} ({function.class_name}): {e}")
                continue
            if not callable(target):
                problems.append(f"{function.qualified_name} ({function.class_name}): not callable")
                continue
            # A PySpark UDF keeps its return type; a plain function gets Spark's default, string.
            spark.udf.register(name, target)
            registered.append(name)
    finally:
        if own:
            client.close()
    if problems:
        raise InvalidArgumentError("cannot import python function(s): " + "; ".join(problems))
    logger.info("registered python functions %s of %s", registered, database)
    return sorted(registered)
