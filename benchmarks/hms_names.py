#!/usr/bin/env python3
"""Cost of the endpoint's name mapping in Python: renaming databases in HMS replies and rewriting view texts.

No daemon, no metastore: it times ``catalogd.hms.methods.rename_result`` on a
decoded ``get_partitions`` reply of N partitions (each with a 20-column storage
descriptor, as HMS returns them), ``rename_args`` on a ``get_table`` call, and
``catalogd.hms.view_text.view_to_client`` on a Spark view (a join with a CTE),
first parsed, then from the rewrite cache (a view read again).
Each figure is the median of the runs, in milliseconds.

    .venv/bin/python benchmarks/hms_names.py [--partitions 2000] [--runs 50]

Prints one JSON document.
"""

from __future__ import annotations

import argparse
import copy
import json
import platform
import statistics
import time
from collections.abc import Callable
from typing import Any

from catalogd.hive_idl import ThriftHiveMetastore, ttypes
from catalogd.hms import methods, view_text
from catalogd.hms.view_text import view_to_client


def partitions(n: int) -> list[Any]:
    cols = [ttypes.FieldSchema(name=f"c{i}", type="string", comment="") for i in range(20)]
    return [
        ttypes.Partition(
            values=[f"2024-01-{i % 28 + 1:02d}", str(i)],
            dbName="sales",
            tableName="orders",
            createTime=1,
            lastAccessTime=0,
            sd=ttypes.StorageDescriptor(
                cols=cols,
                location=f"file:/warehouse/sales.db/orders/ds={i}",
                inputFormat="org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat",
                outputFormat="org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat",
                serdeInfo=ttypes.SerDeInfo(
                    serializationLib="org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe", parameters={}
                ),
                parameters={},
            ),
            parameters={"numFiles": "1", "totalSize": "1024"},
        )
        for i in range(n)
    ]


def spark_view() -> Any:
    text = (
        "WITH big AS (SELECT * FROM orders WHERE amount > 10) "
        "SELECT big.id, c.name FROM big JOIN other.custs c ON big.cust = c.id "
        "WHERE big.id IN (SELECT id FROM spark_catalog.sales.returns)"
    )
    return ttypes.Table(
        dbName="sales",
        tableName="v",
        tableType="VIRTUAL_VIEW",
        viewOriginalText=text,
        viewExpandedText=text,
        parameters={
            "view.catalogAndNamespace.numParts": "2",
            "view.catalogAndNamespace.part.0": "spark_catalog",
            "view.catalogAndNamespace.part.1": "sales",
        },
    )


def fresh(view: Any) -> Any:
    view_text.default_parser().clear()
    return copy.deepcopy(view)


def median_ms(runs: int, setup: Callable[[], Any], work: Callable[[Any], Any]) -> float:
    times = []
    for _ in range(runs):
        value = setup()
        start = time.perf_counter()
        work(value)
        times.append((time.perf_counter() - start) * 1000)
    return round(statistics.median(times), 4)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=50)
    ns = parser.parse_args()

    def add(db: str) -> str:
        return "p__" + db

    reply = partitions(ns.partitions)
    view = spark_view()
    result = {
        "python": platform.python_version(),
        "partitions": ns.partitions,
        "runs": ns.runs,
        "rename_result_get_partitions_ms": median_ms(
            ns.runs, lambda: copy.deepcopy(reply), lambda v: methods.rename_result("get_partitions", v, add)
        ),
        "rename_args_get_table_ms": median_ms(
            ns.runs * 20,
            lambda: ThriftHiveMetastore.get_table_args(dbname="p__sales", tbl_name="orders"),
            lambda a: methods.rename_args("get_table", a, lambda d: d[3:]),
        ),
        "view_to_client_uncached_ms": median_ms(ns.runs, lambda: fresh(view), lambda t: view_to_client(t, "p__")),
        "view_to_client_cached_ms": median_ms(ns.runs, lambda: copy.deepcopy(view), lambda t: view_to_client(t, "p__")),
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
