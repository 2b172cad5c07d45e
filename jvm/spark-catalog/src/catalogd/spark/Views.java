package catalogd.spark;

import catalogd.thrift.NamespacePath;
import catalogd.thrift.NotFound;
import catalogd.thrift.ObjectPath;
import catalogd.thrift.Table;
import catalogd.thrift.TableKind;
import catalogd.thrift.ViewUpdate;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.spark.sql.catalyst.analysis.NoSuchNamespaceException;
import org.apache.spark.sql.catalyst.analysis.NoSuchViewException;
import org.apache.spark.sql.catalyst.analysis.ViewAlreadyExistsException;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.TableCatalog;
import org.apache.spark.sql.connector.catalog.View;
import org.apache.spark.sql.types.StructField;
import org.apache.thrift.TException;

/**
 * {@link CatalogdCatalog}'s views (Spark's {@code ViewCatalog}) as catalogd's: catalogd validates a
 * view's query against its catalog, qualifies every table ({@code db.t}), expands {@code *} and
 * derives the columns; Spark reads the view from that expanded text, resolved in this catalog and
 * the view's database. A view reads tables of its own catalog only (catalogd's rule), and catalogd
 * resolves the query's unqualified names in the view's own database, not the session's current one.
 */
final class Views {
    /** View properties Spark passes that are not properties in the metastore. */
    private static final Set<String> RESERVED = Set.of(TableCatalog.PROP_COMMENT, TableCatalog.PROP_OWNER,
        TableCatalog.PROP_PROVIDER, TableCatalog.PROP_LOCATION, TableCatalog.PROP_EXTERNAL,
        TableCatalog.PROP_IS_MANAGED_LOCATION);

    private final CatalogdCatalog catalog;

    Views(CatalogdCatalog catalog) {
        this.catalog = catalog;
    }

    private String catalogdName() {
        return catalog.info().getName();
    }

    Identifier[] list(String[] namespace) throws NoSuchNamespaceException {
        if (namespace.length != 1) {
            throw new NoSuchNamespaceException(namespace);
        }
        NamespacePath path = new NamespacePath(namespace[0]);
        path.setCatalog(catalogdName());
        List<String> names;
        try {
            names = catalog.connection().call(c -> c.listViews(path));
        } catch (TException e) {
            throw Errors.forNamespace(e, namespace);
        }
        return names.stream().map(n -> Identifier.of(namespace, n)).toArray(Identifier[]::new);
    }

    View load(Identifier ident) throws NoSuchViewException {
        if (ident.namespace().length != 1) {
            throw new NoSuchViewException(ident);
        }
        Table view;
        try {
            view = catalog.connection().call(c -> c.getView(catalog.path(ident)));
        } catch (NotFound e) {
            throw new NoSuchViewException(ident);
        } catch (TException e) {
            throw Errors.of(e);
        }
        return toSpark(ident, view);
    }

    View create(Identifier ident, View view) throws ViewAlreadyExistsException, NoSuchNamespaceException {
        Table made;
        try {
            made = catalog.connection().call(c -> c.createView(toCatalogd(ident, view), false));
        } catch (catalogd.thrift.AlreadyExists e) {
            throw new ViewAlreadyExistsException(ident);
        } catch (NotFound e) {
            throw new NoSuchNamespaceException(ident.namespace());
        } catch (TException e) {
            throw Errors.of(e);
        }
        return toSpark(ident, made);
    }

    View replace(Identifier ident, View view) throws NoSuchViewException {
        ViewUpdate update = new ViewUpdate();
        update.setQuery(view.queryText());
        String comment = view.properties().get(TableCatalog.PROP_COMMENT);
        if (comment != null) {
            update.setComment(comment);
        }
        Map<String, String> props = properties(view.properties());
        if (!props.isEmpty()) {
            update.setSetProperties(props);
        }
        Table altered;
        try {
            altered = catalog.connection().call(c -> c.alterView(catalog.path(ident), update));
        } catch (NotFound e) {
            throw new NoSuchViewException(ident);
        } catch (TException e) {
            throw Errors.of(e);
        }
        return toSpark(ident, altered);
    }

    boolean drop(Identifier ident) {
        if (ident.namespace().length != 1) {
            return false;
        }
        try {
            catalog.connection().call(c -> {
                c.dropView(catalog.path(ident), false);
                return null;
            });
            return true;
        } catch (NotFound e) {
            return false;
        } catch (TException e) {
            throw Errors.of(e);
        }
    }

    void rename(Identifier from, Identifier to) throws NoSuchViewException, ViewAlreadyExistsException {
        // Spark passes the new name as written: db.v2, or catalog.db.v2 (the catalog part is this one).
        String[] ns = to.namespace();
        if (ns.length == 2 && ns[0].equalsIgnoreCase(catalog.name())) {
            ns = new String[] {ns[1]};
        }
        if (ns.length > 0 && !java.util.Arrays.equals(from.namespace(), ns)) {
            throw Errors.unsupported("catalogd renames a view within its database: " + from + " -> " + to);
        }
        try {
            catalog.connection().call(c -> {
                c.renameView(catalog.path(from), to.name(), false);
                return null;
            });
        } catch (catalogd.thrift.AlreadyExists e) {
            throw new ViewAlreadyExistsException(to);
        } catch (NotFound e) {
            throw new NoSuchViewException(from);
        } catch (TException e) {
            throw Errors.of(e);
        }
    }

    private static Map<String, String> properties(Map<String, String> given) {
        Map<String, String> out = new HashMap<>();
        given.forEach((k, v) -> {
            if (!RESERVED.contains(k) && !k.startsWith(TableCatalog.OPTION_PREFIX)) {
                out.put(k, v);
            }
        });
        return out;
    }

    private Table toCatalogd(Identifier ident, View view) {
        ObjectPath path = catalog.path(ident);
        Table table = new Table(path.getName(), path.getDatabase());
        table.setCatalog(path.getCatalog());
        table.setKind(TableKind.VIEW);
        table.setViewText(view.queryText());
        String comment = view.properties().get(TableCatalog.PROP_COMMENT);
        if (comment != null) {
            table.setComment(comment);
        }
        table.setProperties(properties(view.properties()));
        return table;
    }

    private View toSpark(Identifier ident, Table view) {
        String text = view.isSetViewExpandedText() && view.getViewExpandedText() != null
            ? view.getViewExpandedText() : view.getViewText();
        var schema = Types.schema(view.isSetColumns() ? view.getColumns() : List.of(),
            view.isSetPartitionKeys() ? view.getPartitionKeys() : List.of());
        List<String> names = new ArrayList<>();
        for (StructField f : schema.fields()) {
            names.add(f.name());
        }
        Map<String, String> props = new HashMap<>(view.isSetProperties() ? view.getProperties() : Map.of());
        View.Builder builder = new View.Builder()
            .withQueryText(text)
            .withCurrentCatalog(catalog.name())
            .withCurrentNamespace(new String[] {view.getDatabase()})
            .withQueryColumnNames(names.toArray(new String[0]))
            .withSqlConfigs(Map.of());
        builder.withSchema(schema).withProperties(props);
        if (view.isSetComment() && view.getComment() != null) {
            builder.withComment(view.getComment());
        }
        if (view.isSetOwner() && view.getOwner() != null) {
            builder.withOwner(view.getOwner());
        }
        return builder.build();
    }
}
