package catalogd.spark;

import catalogd.thrift.Partition;
import java.time.ZoneId;
import java.util.ArrayList;
import java.util.List;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.execution.datasources.FileFormat;
import org.apache.spark.sql.execution.datasources.FileStatusCache;
import org.apache.spark.sql.execution.datasources.InMemoryFileIndex;
import org.apache.spark.sql.execution.datasources.PartitionPath;
import org.apache.spark.sql.execution.datasources.PartitionSpec;
import org.apache.spark.sql.execution.datasources.PartitioningAwareFileIndex;
import org.apache.spark.sql.execution.datasources.PartitioningUtils;
import org.apache.spark.sql.execution.datasources.v2.FileTable;
import org.apache.spark.sql.execution.datasources.v2.orc.OrcTable;
import org.apache.spark.sql.execution.datasources.v2.parquet.ParquetTable;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import scala.Option;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Reads of a catalogd table with Spark's own file sources (the vectorized parquet and orc readers,
 * filter push-down, partition pruning): a {@code ParquetTable} / {@code OrcTable} whose file index
 * is the metastore's partitions with their own locations (a committed partition overwrite points a
 * partition at its stage's directory, which a directory listing of the table would not find).
 */
final class Reads {
    private Reads() {}

    /** Spark's file table for {@code format}; null when Spark has no v2 reader for it here. */
    static FileTable fileTable(String name, String format, String location, StructType schema,
                               StructType partitionSchema, List<Partition> partitions, FileStatusCache listings) {
        SparkSession spark = SparkSession.active();
        CaseInsensitiveStringMap options = CaseInsensitiveStringMap.empty();
        scala.collection.immutable.Seq<String> paths = CollectionConverters.asScala(List.of(location)).toList();
        Option<StructType> userSchema = Option.apply(schema);
        IndexMaker maker = () -> index(spark, location, partitionSchema, partitions, listings);
        switch (format == null ? "parquet" : format.toLowerCase(java.util.Locale.ROOT)) {
            case "parquet":
                return new Parquet(name, spark, options, paths, userSchema, maker);
            case "orc":
                return new Orc(name, spark, options, paths, userSchema, maker);
            default:
                return null;
        }
    }

    interface IndexMaker {
        PartitioningAwareFileIndex make();
    }

    /**
     * The index of the table's files: its location, or its partitions' own locations. A location
     * that does not exist (a table or partition without files yet) is an empty one: Spark's listing
     * takes a missing root path as empty, so it is not asked of the file system first. Listings
     * come from {@code listings}, kept while the table stays as it is (see CatalogdCatalog).
     */
    static PartitioningAwareFileIndex index(SparkSession spark, String location, StructType partitionSchema,
                                            List<Partition> partitions, FileStatusCache listings) {
        List<Path> roots = new ArrayList<>();
        List<PartitionPath> specs = new ArrayList<>();
        ZoneId zone = ZoneId.of(spark.conf().get("spark.sql.session.timeZone"));
        if (partitionSchema.isEmpty()) {
            if (location != null) {
                roots.add(new Path(location));
            }
        } else {
            for (Partition p : partitions) {
                if (!p.isSetLocation()) {
                    continue;
                }
                Object[] values = new Object[partitionSchema.size()];
                StructField[] fields = partitionSchema.fields();
                for (int i = 0; i < fields.length; i++) {
                    String raw = p.getValues().get(i);
                    values[i] = raw == null || raw.equals("__HIVE_DEFAULT_PARTITION__") ? null
                        : PartitioningUtils.castPartValueToDesiredType(fields[i].dataType(), raw, zone);
                }
                InternalRow row = new GenericInternalRow(values);
                Path path = new Path(p.getLocation());
                roots.add(path);
                specs.add(new PartitionPath(row, path));
            }
        }
        PartitionSpec spec = new PartitionSpec(partitionSchema, CollectionConverters.asScala(specs).toList());
        return new InMemoryFileIndex(spark, CollectionConverters.asScala(roots).toList(),
            scala.collection.immutable.Map$.MODULE$.empty(), Option.apply(partitionSchema),
            listings, Option.apply(spec), Option.empty());
    }

    /** Spark's parquet table over catalogd's partitions. */
    static final class Parquet extends ParquetTable {
        private final transient IndexMaker maker;
        private transient PartitioningAwareFileIndex index;

        Parquet(String name, SparkSession spark, CaseInsensitiveStringMap options,
                scala.collection.immutable.Seq<String> paths, Option<StructType> schema, IndexMaker maker) {
            super(name, spark, options, paths, schema, parquetFormat());
            this.maker = maker;
        }

        @Override
        public synchronized PartitioningAwareFileIndex fileIndex() {
            if (index == null) {
                index = maker.make();
            }
            return index;
        }
    }

    /** Spark's orc table over catalogd's partitions. */
    static final class Orc extends OrcTable {
        private final transient IndexMaker maker;
        private transient PartitioningAwareFileIndex index;

        Orc(String name, SparkSession spark, CaseInsensitiveStringMap options,
            scala.collection.immutable.Seq<String> paths, Option<StructType> schema, IndexMaker maker) {
            super(name, spark, options, paths, schema, orcFormat());
            this.maker = maker;
        }

        @Override
        public synchronized PartitioningAwareFileIndex fileIndex() {
            if (index == null) {
                index = maker.make();
            }
            return index;
        }
    }

    @SuppressWarnings("unchecked")
    private static Class<? extends FileFormat> parquetFormat() {
        return org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat.class;
    }

    @SuppressWarnings("unchecked")
    private static Class<? extends FileFormat> orcFormat() {
        return org.apache.spark.sql.execution.datasources.orc.OrcFileFormat.class;
    }
}
