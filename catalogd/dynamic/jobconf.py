"""Which Spark settings a refresh request may give: an explicit allowlist of resource and
SQL tuning keys, checked before anything runs."""

from __future__ import annotations

import logging
from collections.abc import Mapping

from catalogd.errors import InvalidArgumentError

logger = logging.getLogger(__name__)

#: Keys a request's ``configuration`` (REST) or ``dt refresh --conf`` (Thrift) may set.
#: Exact keys, no prefixes: a family such as ``spark.sql.adaptive.*`` also holds a key that
#: loads a class (``spark.sql.adaptive.customCostEvaluatorClass``), and Spark keeps adding
#: keys. The REST port has no authentication, so anything that loads code (jars, packages,
#: plugins, listeners, extensions, catalogs, committer or discovery classes and scripts),
#: decides where or what data is written (warehouse, checkpoints, overwrite mode, the
#: metastore) or changes results (time zone, ANSI mode, ignoring files) belongs in the
#: daemon's own ``spark.conf``. Keep docs/dynamic-tables.md ("Refresh by hand") in step with this list.
REQUEST_SETTINGS: frozenset[str] = frozenset({
    # driver and executor resources
    "spark.driver.cores",
    "spark.driver.memory",
    "spark.driver.memoryOverhead",
    "spark.driver.maxResultSize",
    "spark.executor.cores",
    "spark.executor.instances",
    "spark.executor.memory",
    "spark.executor.memoryOverhead",
    "spark.executor.pyspark.memory",
    "spark.cores.max",
    "spark.task.cpus",
    "spark.task.maxFailures",
    "spark.default.parallelism",
    "spark.memory.fraction",
    "spark.memory.storageFraction",
    "spark.memory.offHeap.enabled",
    "spark.memory.offHeap.size",
    # dynamic allocation
    "spark.dynamicAllocation.enabled",
    "spark.dynamicAllocation.minExecutors",
    "spark.dynamicAllocation.maxExecutors",
    "spark.dynamicAllocation.initialExecutors",
    "spark.dynamicAllocation.executorAllocationRatio",
    "spark.dynamicAllocation.executorIdleTimeout",
    "spark.dynamicAllocation.cachedExecutorIdleTimeout",
    "spark.dynamicAllocation.schedulerBacklogTimeout",
    "spark.dynamicAllocation.sustainedSchedulerBacklogTimeout",
    "spark.dynamicAllocation.shuffleTracking.enabled",
    "spark.dynamicAllocation.shuffleTracking.timeout",
    # SQL: shuffle, joins, scans
    "spark.sql.shuffle.partitions",
    "spark.sql.autoBroadcastJoinThreshold",
    "spark.sql.broadcastTimeout",
    "spark.sql.join.preferSortMergeJoin",
    "spark.sql.cbo.enabled",
    "spark.sql.cbo.joinReorder.enabled",
    "spark.sql.files.maxPartitionBytes",
    "spark.sql.files.openCostInBytes",
    "spark.sql.files.minPartitionNum",
    "spark.sql.files.maxRecordsPerFile",
    "spark.sql.parquet.compression.codec",
    "spark.sql.orc.compression.codec",
    # SQL: adaptive query execution
    "spark.sql.adaptive.enabled",
    "spark.sql.adaptive.advisoryPartitionSizeInBytes",
    "spark.sql.adaptive.autoBroadcastJoinThreshold",
    "spark.sql.adaptive.coalescePartitions.enabled",
    "spark.sql.adaptive.coalescePartitions.parallelismFirst",
    "spark.sql.adaptive.coalescePartitions.minPartitionSize",
    "spark.sql.adaptive.coalescePartitions.initialPartitionNum",
    "spark.sql.adaptive.localShuffleReader.enabled",
    "spark.sql.adaptive.maxShuffledHashJoinLocalMapThreshold",
    "spark.sql.adaptive.optimizeSkewsInRebalancePartitions.enabled",
    "spark.sql.adaptive.skewJoin.enabled",
    "spark.sql.adaptive.skewJoin.skewedPartitionFactor",
    "spark.sql.adaptive.skewJoin.skewedPartitionThresholdInBytes",
})

#: A value is a size, a count, a duration, a flag or a codec name; anything longer is not.
MAX_VALUE_LENGTH = 256


def check_request_settings(conf: Mapping[str, str]) -> dict[str, str]:
    """The request's settings, unchanged, if every key is allowed and every value plain.

    Raises:
        InvalidArgumentError: naming every refused key (or the first bad value); nothing
            has been started.
    """
    refused = sorted(k for k in conf if k not in REQUEST_SETTINGS)
    if refused:
        logger.info("refresh request refused: configuration keys %s are not allowed", refused)
        keys = ", ".join(refused)
        noun = "key" if len(refused) == 1 else "keys"
        raise InvalidArgumentError(
            f"configuration {noun} {keys} may not be set by a request: a request may set only resource and "
            "SQL tuning keys (spark.executor.memory, spark.sql.shuffle.partitions, spark.sql.adaptive.enabled, "
            "...; the full list is in docs/dynamic-tables.md and in GET /v3/openapi.json); settings that load code "
            "or decide where data is written belong in the daemon's spark.conf")
    for key, value in conf.items():
        if len(value) > MAX_VALUE_LENGTH or any(ord(c) < 32 or ord(c) == 127 for c in value):
            raise InvalidArgumentError(
                f"configuration {key}: the value must be at most {MAX_VALUE_LENGTH} characters "
                "without control characters")
    return dict(conf)
