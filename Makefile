# catalogd — set-up, run, test. `make run` and `make test` work on a fresh machine.
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin
STAMP   = $(VENV)/.installed
CONFIG ?= conf/catalogd.yaml
# Python processes import from cached bytecode (__pycache__) even where the environment sets
# PYTHONDONTWRITEBYTECODE: the install compiles it, and the tests, which start hundreds of Python
# processes (daemons, CLI calls, Spark jobs and workers), write what is still missing. Compiling
# every module from source at each start took a daemon 5.7-7.2 s to be ready; 1.3-1.9 s cached.
PYC     = env -u PYTHONDONTWRITEBYTECODE

.PHONY: run test unit integration lint docs idl install java jvm postgresql chromium kerberos engines clean bench lock

# uv installs the pinned set in requirements.lock (made by `make lock`) in seconds; pip only
# bootstraps uv itself.
$(STAMP): pyproject.toml requirements.lock
	@command -v java >/dev/null 2>&1 && command -v javac >/dev/null 2>&1 || $(MAKE) --no-print-directory java
	@command -v krb5-config >/dev/null 2>&1 && command -v krb5kdc >/dev/null 2>&1 || $(MAKE) --no-print-directory kerberos
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@test -x $(BIN)/uv || $(BIN)/python -m pip install -qq --disable-pip-version-check uv
	@echo "installing catalogd and its pinned dependencies into $(VENV)"
	@$(BIN)/uv pip install -q --python $(BIN)/python --compile-bytecode -r requirements.lock
	@$(BIN)/uv pip install -q --python $(BIN)/python --no-deps -e .
	@$(BIN)/python -m compileall -q catalogd
	@$(MAKE) --no-print-directory jvm
	@touch $(STAMP)

# MIT Kerberos: libkrb5-dev to build the GSSAPI binding (gssapi), and a KDC (krb5kdc, kadmin.local,
# kinit) that the tests start in a temporary directory.
kerberos:
	@if command -v krb5-config >/dev/null 2>&1 && command -v krb5kdc >/dev/null 2>&1 && command -v kinit >/dev/null 2>&1; then :; \
	elif command -v apt-get >/dev/null 2>&1; then \
	  echo "installing MIT Kerberos (krb5-kdc, krb5-admin-server, krb5-user, libkrb5-dev)"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq krb5-kdc krb5-admin-server krb5-user libkrb5-dev gcc >/dev/null; \
	else echo "catalogd needs MIT Kerberos: install krb5-kdc, krb5-admin-server, krb5-user and libkrb5-dev and re-run" >&2; exit 1; fi

# Re-pin the dependencies after a change to pyproject.toml.
lock: $(STAMP)
	test -x $(BIN)/uv || $(BIN)/python -m pip install -qq --disable-pip-version-check uv
	$(BIN)/uv pip compile -q --universal --python-version 3.11 pyproject.toml --extra test --extra docs -o requirements.lock

install: $(STAMP)

# Java 17 runs the embedded Hive Metastore and Spark; its compiler (javac, in the JDK) builds the
# metastore's key check and the Spark catalog plugin (jvm/).
java:
	@if command -v java >/dev/null 2>&1 && command -v javac >/dev/null 2>&1; then java -version 2>&1 | head -1; \
	elif command -v apt-get >/dev/null 2>&1; then \
	  echo "installing Java 17 (openjdk-17-jdk-headless)"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jdk-headless >/dev/null; \
	else echo "Java 17 with its compiler (a JDK) is required: install it and re-run" >&2; exit 1; fi

# The Java code (jvm/), compiled against the pyspark jars: the embedded metastore's key check
# (jvm/metastore-guard) into jvm/build/<hash of the sources>/, and the Spark catalog plugin
# (jvm/spark-catalog) into catalogd/jars/catalogd-spark.jar and catalogd's Spark Connect server
# (jvm/connect-server) into catalogd/jars/catalogd-connect.jar, which the Python package ships; and
# the Hive 4 metastore IDL the HMS endpoint speaks, described from Hive's jar on Maven Central by
# jvm/hms-idl into catalogd/jars/hive-metastore-idl.json (catalogd.hive_idl).
# Nothing to do when the builds match their sources.
jvm:
	@test -x $(BIN)/python || { echo "run make install first" >&2; exit 1; }
	@$(BIN)/python -m catalogd.metastore.guard_classes >/dev/null
	@$(BIN)/python -m catalogd.spark.plugin >/dev/null
	@$(BIN)/python -m catalogd.hive_idl.build >/dev/null

# A PostgreSQL server and its JDBC driver: the integration tests start a real server under
# embedded metastores (`make run` stays on Derby and needs neither).
postgresql:
	@if ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && test -f /usr/share/java/postgresql.jar; then :; \
	elif command -v apt-get >/dev/null 2>&1; then \
	  echo "installing PostgreSQL and its JDBC driver (postgresql, libpostgresql-jdbc-java) for the tests"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql libpostgresql-jdbc-java >/dev/null; \
	else echo "the tests need PostgreSQL: install postgresql and libpostgresql-jdbc-java and re-run" >&2; exit 1; fi

# Debian's Chromium: the console's browser test drives it with Playwright (whose own browser
# download cannot be used here). `make run` needs no browser.
chromium:
	@if command -v chromium >/dev/null 2>&1; then :; \
	elif command -v apt-get >/dev/null 2>&1; then \
	  echo "installing Chromium (chromium) for the console's browser test"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	else echo "the console's browser test needs Chromium: install chromium and re-run" >&2; exit 1; fi

# The real engines and metastores the integration tests start (Trino, Flink, Hive's standalone
# metastores), from Maven Central and PyPI into one cache shared by every checkout
# ($$CATALOGD_ENGINES, by default ~/.cache/catalogd-engines): about a gigabyte, downloaded once.
engines: $(STAMP)
	@$(BIN)/python -m tests.integration.engines

run: $(STAMP) jvm
	$(BIN)/catalogd serve --config $(CONFIG)

# Three test processes (pytest-xdist), each module whole in one of them so module fixtures (a
# module's daemon, its Spark application) are still made once: an integration test mostly waits on
# JVMs, deadlines and leases, so on 2 cores two processes take about half the time of one, and
# three less than two (docs/development.md).
test: $(STAMP) jvm postgresql chromium engines lint docs
	$(PYC) $(BIN)/python -m pytest -q --durations=25 -n 3 --dist loadfile tests

unit: $(STAMP) jvm
	$(PYC) $(BIN)/python -m pytest -q tests/unit

integration: $(STAMP) jvm postgresql chromium engines
	$(PYC) $(BIN)/python -m pytest -q -m integration tests

lint: $(STAMP)
	$(BIN)/ruff check catalogd tests benchmarks examples docs/hooks
	$(BIN)/mypy

# The documentation site (docs/, mkdocs.yml) into site/; --strict: a warning (a broken link or
# anchor, a page missing from the nav) fails the build, and so `make test`.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

# Regenerate the Thrift code from idl/ (Debian: apt-get install thrift-compiler).
idl:
	rm -rf catalogd/gen
	mkdir -p catalogd/gen
	thrift -gen py:package_prefix=catalogd.gen. -out catalogd/gen idl/catalogd.thrift
	# The Spark plugin's Java client (Java reserves the word `function`: the argument is renamed;
	# Thrift's wire format carries field ids, not names).
	rm -rf jvm/spark-catalog/gen
	mkdir -p jvm/spark-catalog/gen
	sed -e 's/Function function/Function fn/' idl/catalogd.thrift > jvm/spark-catalog/gen/catalogd.thrift
	thrift -gen java:generated_annotations=suppress -out jvm/spark-catalog/gen jvm/spark-catalog/gen/catalogd.thrift
	rm jvm/spark-catalog/gen/catalogd.thrift

bench: $(STAMP)
	$(BIN)/python benchmarks/catalog_ops.py
	$(BIN)/python benchmarks/ctas.py
	$(BIN)/python benchmarks/spark_catalog.py
	$(BIN)/python benchmarks/dynamic_tables.py

clean:
	rm -rf $(VENV) build jvm/build catalogd/jars site *.egg-info .pytest_cache .ruff_cache
