"""The generated code in catalogd/gen/ must be exactly what `make idl` makes from idl/catalogd.thrift."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
IDL = REPO / "idl" / "catalogd.thrift"
GEN = REPO / "catalogd" / "gen"
JAVA_GEN = REPO / "jvm" / "spark-catalog" / "gen"

def files_under(root: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(root)): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file() and "__pycache__" not in path.parts
    }


@pytest.mark.skipif(
    shutil.which("thrift") is None, reason="thrift compiler not installed (apt-get install thrift-compiler)"
)
def test_generated_code_matches_the_idl(tmp_path: Path) -> None:
    subprocess.run(
        ["thrift", "-gen", "py:package_prefix=catalogd.gen.", "-out", str(tmp_path), str(IDL)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    generated = files_under(tmp_path)
    committed = files_under(GEN)  # `make idl` empties catalogd/gen/ first: nothing else belongs there
    assert generated, "the thrift compiler wrote nothing"
    assert sorted(committed) == sorted(generated), "catalogd/gen/ has other files than `make idl` writes"
    stale = [name for name, data in generated.items() if committed[name] != data]
    assert not stale, f"catalogd/gen/ is out of date with {IDL.name} (run `make idl`): {stale}"


@pytest.mark.skipif(
    shutil.which("thrift") is None, reason="thrift compiler not installed (apt-get install thrift-compiler)"
)
def test_the_spark_plugin_s_generated_java_matches_the_idl(tmp_path: Path) -> None:
    """The plugin's Java client (jvm/spark-catalog/gen/), as `make idl` makes it: Java reserves the
    word ``function``, so that argument is renamed first (the wire carries field ids, not names)."""
    renamed = tmp_path / "catalogd.thrift"
    renamed.write_text(IDL.read_text().replace("Function function", "Function fn"))
    out = tmp_path / "gen"
    out.mkdir()
    subprocess.run(
        ["thrift", "-gen", "java:generated_annotations=suppress", "-out", str(out), str(renamed)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    generated = files_under(out)
    committed = files_under(JAVA_GEN)
    assert generated, "the thrift compiler wrote nothing"
    assert sorted(committed) == sorted(generated), "jvm/spark-catalog/gen/ has other files than `make idl` writes"
    stale = [name for name, data in generated.items() if committed[name] != data]
    assert not stale, f"jvm/spark-catalog/gen/ is out of date with {IDL.name} (run `make idl`): {stale}"


def test_the_generated_package_imports() -> None:
    """The package prefix is right: the generated modules import each other as catalogd.gen.*."""
    from catalogd.gen.catalogd_thrift import CatalogService, constants, ttypes

    assert hasattr(CatalogService, "Client") and hasattr(CatalogService, "Processor")
    assert ttypes.TableKind.MANAGED == 1
    assert constants is not None
