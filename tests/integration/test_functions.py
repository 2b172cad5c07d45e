"""Functions on both backends; Java functions called by Spark SQL from the metastore; Python ones registered."""

from __future__ import annotations

import json

import pytest

from catalogd.errors import (
    FunctionAlreadyExistsError,
    FunctionNotFoundError,
    InvalidArgumentError,
    PermissionDeniedError,
)
from catalogd.model import FunctionLanguage, Resource

pytestmark = [pytest.mark.integration]

UPPER = "org.apache.hadoop.hive.ql.udf.generic.GenericUDFUpper"


def test_create_describe_alter_rename_drop(client, db):
    made = client.create_function(f"{db}.up", UPPER, resources=["file:/tmp/udfs.jar", "archive:hdfs:///env.zip",
                                                               "/tmp/helper.py"])
    assert made.class_name == UPPER and made.language is FunctionLanguage.JAVA
    assert made.resources == [Resource("jar", "file:/tmp/udfs.jar"), Resource("archive", "hdfs:///env.zip"),
                              Resource("file", "/tmp/helper.py")]
    assert client.list_functions(db) == ["up"]
    assert client.get_function(f"{db}.up") == made

    with pytest.raises(FunctionAlreadyExistsError):
        client.create_function(f"{db}.up", UPPER)
    assert client.create_function(f"{db}.up", "other.Cls", if_not_exists=True).class_name == UPPER

    py = client.create_function(f"{db}.cap", "string:capwords", language="python")
    assert py.language is FunctionLanguage.PYTHON and py.class_name == "string:capwords"
    altered = client.alter_function(f"{db}.cap", "textwrap:dedent", language="python", resources=[])
    assert altered.class_name == "textwrap:dedent" and altered.resources == []
    with_files = client.alter_function(f"{db}.cap", "textwrap:dedent", language="python", resources=["/x/env.zip"])
    assert with_files.resources == [Resource("archive", "/x/env.zip")]
    assert client.get_function(f"{db}.cap").resources == [Resource("archive", "/x/env.zip")]

    client.rename_function(f"{db}.up", "upper2")
    assert client.list_functions(db) == ["cap", "upper2"]
    with pytest.raises(FunctionNotFoundError):
        client.rename_function(f"{db}.up", "x")
    client.rename_function(f"{db}.up", "x", if_exists=True)
    with pytest.raises(FunctionAlreadyExistsError):
        client.rename_function(f"{db}.upper2", "cap")
    client.drop_function(f"{db}.upper2")
    with pytest.raises(FunctionNotFoundError):
        client.drop_function(f"{db}.upper2")
    client.drop_function(f"{db}.upper2", if_exists=True)
    with pytest.raises(FunctionNotFoundError):
        client.get_function(f"{db}.upper2")
    assert client.list_functions(db) == ["cap"]


def test_bad_functions_change_nothing(client, db):
    for cls, language, message in [
        ("", "java", "needs a class"),
        ("not a class", "java", "not a JVM class"),
        ("no_colon", "python", "module:function"),
        ("mod:1bad", "python", "module:function"),
    ]:
        with pytest.raises(InvalidArgumentError, match=message):
            client.create_function(f"{db}.f", cls, language=language)
    with pytest.raises(InvalidArgumentError, match="language"):
        client.create_function(f"{db}.f", UPPER, language="cobol")
    assert client.list_functions(db) == []
    with pytest.raises(PermissionDeniedError):
        client.create_function(f"ro.{db.split('.', 1)[1]}.f", UPPER)


@pytest.mark.spark
def test_spark_calls_a_java_function_from_the_metastore(client, main_db, spark):
    short = main_db.split(".", 1)[1]
    client.create_function(f"{main_db}.shout", UPPER)
    assert spark.sql(f"SELECT {short}.shout('quiet please')").first()[0] == "QUIET PLEASE"
    names = [r.function for r in spark.sql(f"SHOW USER FUNCTIONS IN {short}").collect()]
    assert any(n.endswith("shout") for n in names)


@pytest.mark.spark
def test_python_functions_are_registered_into_a_session(client, main_db, spark):
    from catalogd.spark import register_functions

    client.create_function(f"{main_db}.title_case", "string:capwords", language="python")
    client.create_function(f"{main_db}.shout", UPPER)  # a JVM one: left to Spark
    assert register_functions(spark, main_db, client=client) == ["title_case"]
    assert spark.sql("SELECT title_case('hello big world')").first()[0] == "Hello Big World"
    client.create_function(f"{main_db}.broken", "no_such_module_anywhere:f", language="python")
    with pytest.raises(InvalidArgumentError, match="no_such_module_anywhere"):
        register_functions(spark, main_db, client=client)


def test_cli_functions(client, db, run_cli):
    made = run_cli("--json", "function", "create", f"{db}.up", "--class", UPPER, "--resource", "/x/u.jar")
    assert made.code == 0, made.stderr
    data = json.loads(made.stdout)
    assert data["class_name"] == UPPER and data["language"] == "java"
    assert data["resources"] == [{"type": "jar", "uri": "/x/u.jar"}]
    assert json.loads(run_cli("--json", "function", "list", db).stdout) == ["up"]
    assert run_cli("function", "describe", f"{db}.up").code == 0
    again = run_cli("function", "create", f"{db}.up", "--class", UPPER)
    assert again.code == 1 and again.stderr.startswith("error: already-exists: ")
    assert run_cli("function", "create", f"{db}.up", "--class", UPPER, "--if-not-exists").code == 0
    nothing = run_cli("function", "alter", f"{db}.up")
    assert nothing.code == 2
    altered = run_cli("--json", "function", "alter", f"{db}.up", "--no-resources")
    assert altered.code == 0 and json.loads(altered.stdout)["resources"] == []
    assert run_cli("function", "rename", f"{db}.up", "up2").code == 0
    assert run_cli("function", "drop", f"{db}.up2").code == 0
    missing = run_cli("function", "drop", f"{db}.up2")
    assert missing.code == 1 and missing.stderr.startswith("error: not-found: ")
