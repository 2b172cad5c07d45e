"""Dynamic tables (FLIP-435): a query and a freshness target, kept fresh by Spark jobs."""
