"""The function's code for moto's Lambda: the project's sources, small and reproducible."""

from __future__ import annotations

import io
import zipfile

from stages.build import local_lambda


def test_function_zip_holds_the_sources_only_and_is_reproducible():
    data = local_lambda.function_zip()
    names = zipfile.ZipFile(io.BytesIO(data)).namelist()
    assert "stages/train/worker.py" in names and "stages/train/protocol.py" in names
    assert all(n.startswith("stages/") and n.endswith(".py") and "__pycache__" not in n for n in names)
    assert len(data) < 2_000_000  # torch and the rest come from the runtime image
    assert local_lambda.function_zip() == data  # fixed timestamps: same code, same zip


def test_runtime_folder_has_the_bootstrap_and_its_dockerfile():
    folder = local_lambda.runtime_folder()
    assert (folder / "Dockerfile").is_file() and (folder / "bootstrap.py").is_file()
