"""The build context and its digest (stages/build/context.py)."""

from __future__ import annotations

import zipfile

import pytest

from stages.build import context, wheelhouse
from stages.config import cache_dir

LOCK = "numpy==2.0.0\n"


@pytest.fixture
def checkout(tmp_path):
    """A copy of the parts of the checkout that go into the images."""
    import shutil

    root = context.checkout()
    copy = tmp_path / "checkout"
    for name in ("containers", "stages", "flows"):
        shutil.copytree(root / name, copy / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy2(root / "pyproject.toml", copy / "pyproject.toml")
    return copy


def _digest(root, image="lambda", lock=LOCK, base="sha256:base", python="3.11"):
    return context.image_digest(root, image, lock, context.source_listing(root), base, python, {"BASE_IMAGE": "b"})


def test_digest_is_stable_for_unchanged_inputs(checkout):
    first = _digest(checkout)
    assert len(first) == context.TAG_LENGTH and _digest(checkout) == first
    (checkout / "stages" / "__pycache__").mkdir(exist_ok=True)
    (checkout / "stages" / "__pycache__" / "x.cpython-311.pyc").write_bytes(b"\0")
    assert _digest(checkout) == first  # byte code is not source


@pytest.mark.parametrize(
    "change",
    [
        lambda root: (root / "containers/lambda/Dockerfile").write_text("FROM x\n"),
        lambda root: (root / "stages/contract.py").write_text("# changed\n"),
        lambda root: (root / "flows/new_module.py").write_text("x = 1\n"),
        lambda root: (root / "pyproject.toml").write_text("[project]\nname = 'x'\n"),
    ],
)
def test_digest_follows_every_file_that_goes_into_the_image(checkout, change):
    before = _digest(checkout)
    change(checkout)
    assert _digest(checkout) != before


def test_digest_follows_lock_base_and_python(checkout):
    before = _digest(checkout)
    assert _digest(checkout, lock="numpy==2.0.1\n") != before
    assert _digest(checkout, base="sha256:other") != before
    assert _digest(checkout, python="3.12") != before


def test_an_image_ignores_the_other_images_folder(checkout):
    before = _digest(checkout, image="lambda")
    (checkout / "containers/graph-server/entrypoint.sh").write_text("#!/bin/sh\n")
    assert _digest(checkout, image="lambda") == before
    assert _digest(checkout, image="graph-server") != _digest(checkout, image="lambda")


def test_assemble_writes_the_context_and_the_wheels_beside_it(tmp_path):
    root = context.checkout()
    had_build_dir = (root / "build").exists()
    lock = wheelhouse.lock_text(wheelhouse.lock(wheelhouse.runtime_requirements()))
    ctx, wheels = context.assemble(tmp_path, root, lock, "3.11", cache_dir("wheels"))
    assert (ctx / "runtime/requirements.txt").read_text() == lock
    runtime = sorted(p.name for p in (wheels / "runtime").iterdir())
    assert len(runtime) == len(lock.splitlines()) and any(w.startswith("torch-") for w in runtime)
    assert any(p.name.startswith("awslambdaric-") for p in (wheels / "lambda").iterdir())
    # no wheel is sent to the engine with the context
    assert not list(ctx.rglob("*.whl"))[1:] and [p.parent.name for p in ctx.rglob("*.whl")] == ["project"]
    assert (ctx / "graph-server/Dockerfile").is_file() and (ctx / "lambda/Dockerfile").is_file()
    [project] = list((ctx / "project").iterdir())
    names = zipfile.ZipFile(project).namelist()
    assert "stages/build/__init__.py" in names and "flows/cli.py" in names
    assert not any("__pycache__" in n for n in names)
    # no build litter left in the checkout that others share
    assert (root / "build").exists() == had_build_dir
    assert not (ctx / ".project-src").exists()


def test_serve_wheels_serves_a_find_links_listing_on_a_stable_port(tmp_path):
    import urllib.request

    (tmp_path / "runtime").mkdir()
    (tmp_path / "runtime" / "six-1.17.0-py2.py3-none-any.whl").write_bytes(b"wheel")
    with context.serve_wheels(tmp_path, LOCK) as url:
        assert url.startswith("http://127.0.0.1:")
        listing = urllib.request.urlopen(f"{url}/runtime/").read().decode()
        assert 'href="six-1.17.0-py2.py3-none-any.whl"' in listing
        assert urllib.request.urlopen(f"{url}/runtime/six-1.17.0-py2.py3-none-any.whl").read() == b"wheel"
    with context.serve_wheels(tmp_path, LOCK) as again:
        assert again == url  # same lock, same URL: the engine's layer cache stays valid
    with pytest.raises(OSError):
        urllib.request.urlopen(f"{url}/runtime/", timeout=2)
