"""Remote roots: real HTTP servers and moto's S3 server on 127.0.0.1; verified, cached,
nothing half-written."""

from __future__ import annotations

import hashlib
import http.server
import threading
from pathlib import Path

import pytest

from stages.errors import DorylusError
from stages.ingest import download, ingest
from stages.ingest.dataset import IngestedGraph

EDGES = "0 1\n1 2\n2 0\n2 3\n"
LABELS = "0\n1\n1\n0\n"


class Server:
    """An HTTP server on 127.0.0.1 serving ``folder``; it logs each request path and can
    announce a wrong Content-Length for chosen paths (a connection cut short)."""

    def __init__(self, folder: Path):
        self.requests: list[str] = []
        self.short: set[str] = set()
        server = self

        class Handler(http.server.SimpleHTTPRequestHandler):
            def __init__(self, *args, **kwargs):
                super().__init__(*args, directory=str(folder), **kwargs)

            def do_GET(self):
                server.requests.append(self.path)
                if self.path in server.short:
                    body = (folder / self.path.lstrip("/")).read_bytes()
                    self.send_response(200)
                    self.send_header("Content-Length", str(len(body) + 100))
                    self.end_headers()
                    self.wfile.write(body)
                    self.close_connection = True
                    return
                super().do_GET()

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def served(tmp_path):
    folder = tmp_path / "site"
    (folder / "data").mkdir(parents=True)
    (folder / "data" / "graph.txt").write_text(EDGES)
    (folder / "data" / "labels.txt").write_text(LABELS)
    server = Server(folder)
    yield server, folder
    server.stop()


@pytest.fixture
def cache(dorylus_home):
    """The download cache, emptied before and after the test."""
    import shutil

    from stages.config import cache_dir

    shutil.rmtree(cache_dir("downloads"))
    yield cache_dir("downloads")
    shutil.rmtree(cache_dir("downloads"), ignore_errors=True)


def _files(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


def test_http_root_canonical_planetoid_files(http_datasets, store, cache):
    """The shared Cora files over HTTP, checked against the built-in sha256 table."""
    artifact = ingest("planetoid:cora", f"{http_datasets}/planetoid", store=store)
    g = IngestedGraph(artifact.path())
    assert (g.num_nodes, g.num_classes) == (2708, 7)
    assert sorted(Path(f).name for f in _files(cache)) == sorted(f"ind.cora.{p}" for p in download.PLANETOID_PARTS)


def test_second_call_needs_no_network(served, store, cache):
    server, _ = served
    root = f"{server.url}/data"
    options = {"labels": "labels.txt"}
    first = ingest("edgelist:graph.txt", root, store=store, options=options)
    assert sorted(server.requests) == ["/data/graph.txt", "/data/labels.txt"]
    g = IngestedGraph(first.path())
    assert g.num_nodes == 4 and g.labels().tolist() == [0, 1, 1, 0]
    server.stop()
    second = ingest("edgelist:graph.txt", root, store=store, options=options)
    assert second.cached and second.key == first.key
    assert len(server.requests) == 2


def test_wrong_checksum_fails_and_caches_nothing(served, store, cache, assert_nothing_written):
    server, _ = served
    with pytest.raises(DorylusError, match="sha256 .* does not match the expected 0000"):
        ingest("edgelist:graph.txt", f"{server.url}/data", store=store, options={"sha256": {"graph.txt": "0" * 64}})
    assert _files(cache) == []
    assert_nothing_written(store)


def test_user_checksum_accepted_and_rechecked_on_cached_copy(served, cache):
    server, _ = served
    root = f"{server.url}/data"
    good = {"sha256": {"graph.txt": hashlib.sha256(EDGES.encode()).hexdigest().upper()}}
    folder = download.local_root(root, "edgelist:graph.txt", good)
    assert (folder / "graph.txt").read_text() == EDGES
    download.local_root(root, "edgelist:graph.txt", good)
    assert len(server.requests) == 1
    # a digest the cached copy does not match: fetched again, refused, the good copy kept
    with pytest.raises(DorylusError, match="does not match"):
        download.local_root(root, "edgelist:graph.txt", {"sha256": {"graph.txt": "ab" * 32}})
    assert len(server.requests) == 2
    assert _files(cache) == [str((folder / "graph.txt").relative_to(cache))]


def test_built_in_checksum_catches_a_different_file(served, cache):
    """A file named like a canonical dataset file but with other bytes is refused."""
    server, folder = served
    (folder / "fake").mkdir()
    (folder / "fake" / "ind.cora.x").write_bytes(b"not the real cora features")
    with pytest.raises(DorylusError, match="does not match the expected 23cfa55d"):
        download.fetch(f"{server.url}/fake/ind.cora.x", cache / "x" / "ind.cora.x", download.KNOWN_SHA256["ind.cora.x"])
    assert _files(cache) == []


def test_short_body_fails_and_caches_nothing(served, cache):
    server, _ = served
    server.short.add("/data/graph.txt")
    with pytest.raises(DorylusError, match="broke off|announced"):
        download.local_root(f"{server.url}/data", "edgelist:graph.txt", {})
    assert _files(cache) == []


def test_missing_remote_file(served, cache):
    server, _ = served
    with pytest.raises(DorylusError, match="HTTP 404"):
        download.local_root(f"{server.url}/data", "edgelist:absent.txt", {})
    assert _files(cache) == []


def test_unreachable_server(cache):
    from tests.conftest import free_port

    with pytest.raises(DorylusError, match="cannot download"):
        download.local_root(f"http://127.0.0.1:{free_port()}/x", "edgelist:graph.txt", {})


def test_checksum_for_a_file_not_read(served, cache):
    server, _ = served
    with pytest.raises(DorylusError, match="--sha256 names labels.txt"):
        download.local_root(f"{server.url}/data", "edgelist:graph.txt", {"sha256": {"labels.txt": "0" * 64}})
    assert server.requests == []


def test_local_and_unsupported_roots(tmp_path):
    assert download.local_root(None, "synthetic:", {}) is None
    assert download.local_root(str(tmp_path), "edgelist:x", {}) == tmp_path
    with pytest.raises(DorylusError, match="only https://, http:// and s3://"):
        download.local_root("ftp://example.org/data", "edgelist:x", {})


def test_s3_root(s3_bucket, store, cache):
    import boto3

    s3 = boto3.client("s3")
    s3.put_object(Bucket=s3_bucket, Key="graphs/tiny/graph.txt", Body=EDGES.encode())
    s3.put_object(Bucket=s3_bucket, Key="graphs/tiny/labels.txt", Body=LABELS.encode())
    root = f"s3://{s3_bucket}/graphs/tiny"
    artifact = ingest("edgelist:graph.txt", root, store=store, options={"labels": "labels.txt"})
    g = IngestedGraph(artifact.path())
    assert g.num_edges == 4 and g.labels().tolist() == [0, 1, 1, 0]
    assert sorted(Path(f).name for f in _files(cache)) == ["graph.txt", "labels.txt"]
    with pytest.raises(DorylusError, match="NoSuchKey"):
        download.local_root(root, "edgelist:absent.txt", {})
    with pytest.raises(DorylusError, match="does not match"):
        download.local_root(f"s3://{s3_bucket}/graphs", "edgelist:tiny/graph.txt", {"sha256": {"tiny/graph.txt": "1" * 64}})


def test_known_checksums_match_the_shared_datasets(datasets):
    on_disk = {p.name: p for p in datasets.rglob("*") if p.is_file() and p.name != "README.md"}
    assert set(download.KNOWN_SHA256) == set(on_disk)
    for name, digest in download.KNOWN_SHA256.items():
        assert hashlib.sha256(on_disk[name].read_bytes()).hexdigest() == digest, name


def test_public_planetoid_urls():
    assert download.PLANETOID_URLS[0] == "https://github.com/kimiyoung/planetoid/raw/master/data/ind.cora.x"
    assert len(download.PLANETOID_URLS) == 24
    for url in download.PLANETOID_URLS:
        name = url.rsplit("/", 1)[1]
        assert name in download.KNOWN_SHA256 or name.startswith("ind.pubmed.")
