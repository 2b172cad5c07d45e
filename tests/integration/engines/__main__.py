"""``python -m tests.integration.engines``: install every engine the integration tests start (``make engines``)."""

from __future__ import annotations

import sys

from . import flink, hive, iceberg_rest, iceberg_spark, trino


def main() -> int:
    installers: list[tuple[str, object]] = [
        ("Hive standalone metastores 4.0.1 and 3.1.3", hive.install),
        ("trino", trino.install),
        (f"Flink {flink.FLINK_VERSION} (PyPI apache-flink, own venv) and its Hive 3.1.3 connector", flink.install),
        (f"Spark {iceberg_spark.PYSPARK_VERSION} (PyPI pyspark, own venv) with Iceberg "
         f"{iceberg_spark.ICEBERG_VERSION}'s Spark runtime", iceberg_spark.install),
        (f"Iceberg {iceberg_rest.VERSION} REST test fixtures (reference REST server, REST Compatibility Kit)",
         iceberg_rest.install),
    ]
    for name, install in installers:
        print(f"installing {name}", flush=True)
        install()  # type: ignore[operator]
    return 0


if __name__ == "__main__":
    sys.exit(main())
