"""One error mapping for the HMS endpoint: an exception the called method declares, else MetaException."""

from __future__ import annotations

import pytest

from catalogd.errors import (
    CatalogError,
    DatabaseNotEmptyError,
    InvalidArgumentError,
    MetastoreUnavailableError,
    TableAlreadyExistsError,
    TableNotFoundError,
)
from catalogd.hive_idl import ttypes as hms
from catalogd.hms import methods
from catalogd.hms.errors import to_hms_error


@pytest.mark.parametrize(("error", "method", "expected"), [
    (TableNotFoundError("t"), "get_table", hms.NoSuchObjectException),
    # get_all_functions declares only a MetaException (Hive 4 gave get_partition_names a NoSuchObjectException).
    (TableNotFoundError("t"), "get_all_functions", hms.MetaException),
    (TableAlreadyExistsError("t"), "create_table", hms.AlreadyExistsException),
    (DatabaseNotEmptyError("d"), "drop_database", hms.InvalidOperationException),
    # A bad definition: InvalidObjectException where declared (create_*), InvalidOperationException
    # where that is declared instead (alter_*, drop_database).
    (InvalidArgumentError("bad"), "create_table", hms.InvalidObjectException),
    (InvalidArgumentError("bad"), "create_function", hms.InvalidObjectException),
    (InvalidArgumentError("bad"), "alter_table_with_environment_context", hms.InvalidOperationException),
    (InvalidArgumentError("bad"), "drop_database", hms.InvalidOperationException),
    (InvalidArgumentError("bad"), "drop_table", hms.MetaException),
    (MetastoreUnavailableError("down"), "get_table", hms.MetaException),
])
def test_each_error_is_an_exception_the_method_declares(error: CatalogError, method: str,
                                                        expected: type[Exception]) -> None:
    exc = to_hms_error(error, method)
    assert type(exc) is expected
    assert exc.message == f"catalogd: {error.message}"  # type: ignore[attr-defined]
    # The router puts it in the result struct as it is: it never becomes a TApplicationException.
    result = methods.error_result(method, exc)
    assert result is not None and exc in vars(result).values()


def test_an_error_fitting_only_a_hive_4_field_is_said_in_a_2_3_field() -> None:
    # Hive 4 gave get_partitions_by_names an o3 InvalidObjectException; 2.3 declared o1 MetaException
    # and o2 NoSuchObjectException.
    result = methods.error_result("get_partitions_by_names", hms.InvalidObjectException(message="bad"))
    assert result is not None
    assert isinstance(result.o1, hms.MetaException) and result.o1.message == "bad"  # a 2.3 client reads it
    assert result.o3 is None


def test_an_error_fitting_a_2_3_field_stays_alone() -> None:
    result = methods.error_result("get_partitions_by_names", hms.NoSuchObjectException(message="no t"))
    assert result is not None
    assert isinstance(result.o2, hms.NoSuchObjectException)
    assert result.o1 is None and result.o3 is None
