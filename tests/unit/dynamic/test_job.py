"""The refresh job's listing of the files its query reads (beside the write on Connect)."""

from __future__ import annotations


class _Plan:
    def __init__(self, error: Exception | None = None) -> None:
        self.error = error

    def inputFiles(self) -> list[str]:
        if self.error is not None:
            raise self.error
        return ["file:/w/t/ds=1/part-0.parquet"]


def test_the_input_files_listed_beside_the_write_or_their_error() -> None:
    from catalogd.dynamic import job

    for background in (True, False):
        assert job._Listing(_Plan(), background).files() == ["file:/w/t/ds=1/part-0.parquet"]
        listing = job._Listing(_Plan(RuntimeError("gone")), background)
        try:
            listing.files()
        except RuntimeError as e:
            assert str(e) == "gone"
        else:
            raise AssertionError("a failed listing fails the run before its commit")
