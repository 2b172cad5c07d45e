"""An engine's own virtualenv in the engines cache, made once with uv (Flink's pyflink, Spark with
Iceberg's runtime): engines whose Python packages conflict with the project's."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from . import maven

__all__ = ["installed_venv", "uv"]


def uv() -> str:
    """The project's uv (its lock installs it): it builds a venv in seconds where pip takes minutes."""
    beside = Path(sys.executable).parent / "uv"
    found = str(beside) if beside.exists() else shutil.which("uv")
    if found is None:
        raise RuntimeError("uv is needed to install an engine's virtualenv (it is in the project's test venv)")
    return found


def installed_venv(venv: Path, requirements: list[str]) -> Path:
    """``venv`` with ``requirements`` installed, made once under a lock (an install cut short is
    made again); the project's own interpreter (3.11) is its Python."""
    done = venv / ".installed"
    if done.exists():
        return venv
    venv.parent.mkdir(parents=True, exist_ok=True)
    with maven.locked(venv):
        if done.exists():
            return venv
        if venv.exists():
            shutil.rmtree(venv)  # an install cut short: start again
        tool = uv()
        subprocess.run([tool, "venv", "--quiet", "--python", sys.executable, str(venv)], check=True)
        subprocess.run([tool, "pip", "install", "--quiet", "--python", str(venv / "bin" / "python"), *requirements],
                       check=True)
        done.touch()
    return venv
