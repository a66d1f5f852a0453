"""``edgelist:PATH``: a SNAP-style text edge list, optionally with feature and label files.

- the edge list: one ``SRC DST`` pair per line, separated by tabs, spaces or a comma;
  lines starting with ``#`` or ``%`` are comments; ``.gz`` files are read compressed.
  Edges are directed as listed (the writer's ``undirected`` option adds reverse edges).
- ``options["features"]``: one row of numbers per node, in node-id order, separated by
  commas and/or spaces. Every number form Python reads is accepted (``-0.3``, ``.5``,
  ``1e-3``); the authors' reader silently dropped rows starting with ``-`` or ``.``.
- ``options["labels"]``: one integer class per line, in node-id order; -1 = unlabeled.

The node count is the largest node id + 1, unless the feature or label file has more rows
(isolated nodes at the end); those files must agree with each other and cover every id.

Text is parsed in blocks of ``BLOCK_BYTES`` with pyarrow's CSV parser, so files larger
than memory stream (pandas' C reader was about as fast on 2 busy cores; pyarrow's is
multi-threaded and a core dependency; tests/bench/bench_ingest.py compares them). A
block the fast parser rejects (irregular spacing, a malformed line) is parsed again line
by line: that path accepts any whitespace and names the first bad line.
"""

from __future__ import annotations

import gzip
import re
from pathlib import Path
from typing import BinaryIO, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

from stages.errors import DorylusError
from stages.hashing import sha256_file
from stages.ingest.schema import GraphSource

BLOCK_BYTES = 1 << 25
_SEPARATORS = re.compile(rb"[,\s]+")


def required_files(argument: str, options: dict) -> list[str]:
    if not argument:
        raise DorylusError("edgelist source needs a path: edgelist:PATH")
    return [argument] + [options[k] for k in ("features", "labels") if options.get(k)]


def load(argument: str, root: Path | None, options: dict) -> GraphSource:
    at = (lambda f: Path(root, f)) if root is not None else Path
    path = at(argument)
    files = {str(f): sha256_file(at(f)) for f in required_files(argument, options)}

    x = y = None
    if options.get("features"):
        x = read_matrix(at(options["features"]), np.float32, "feature")
    if options.get("labels"):
        y = read_matrix(at(options["labels"]), np.int64, "label", columns=1)[:, 0]
    if x is not None and y is not None and len(x) != len(y):
        raise DorylusError(
            f"the feature file has {len(x)} rows but the label file has {len(y)}; "
            "both need one row per node, in node-id order"
        )

    count, max_id = 0, -1
    for src, dst in _edge_chunks(path):
        count += len(src)
        max_id = max(max_id, int(src.max()), int(dst.max()))
    if count == 0:
        raise DorylusError(f"{path}: no edges found (only comments or blank lines); check the file")
    n = max_id + 1
    for what, rows in (("feature", x), ("label", y)):
        if rows is not None:
            if len(rows) < n:
                raise DorylusError(
                    f"{path} names node {max_id} but the {what} file has only {len(rows)} rows "
                    f"(nodes 0..{len(rows) - 1}); give one row per node up to the largest id"
                )
            n = len(rows)

    return GraphSource(
        name=_stem(path),
        num_nodes=n,
        edge_chunks=lambda: _edge_chunks(path),
        features=x,
        labels=y,
        num_classes=int(y.max()) + 1 if y is not None and len(y) else 0,
        split_definition="none in source (edge list)",
        undirected=False,
        files=files,
        notes={"edges_in_file": count, "largest_node_id": max_id},
    )


def _stem(path: Path) -> str:
    name = path.name.removesuffix(".gz")
    return name.rsplit(".", 1)[0] if "." in name else name


def _edge_chunks(path: Path) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    for _, rows in read_blocks(path, np.int64, "edge", columns=2, nonnegative=True):
        if len(rows):
            yield rows[:, 0], rows[:, 1]


def read_matrix(path: Path, dtype, what: str, columns: int | None = None) -> np.ndarray:
    """The whole file as a (rows, columns) array."""
    blocks = [rows for _, rows in read_blocks(path, dtype, what, columns)]
    if not blocks or sum(len(b) for b in blocks) == 0:
        raise DorylusError(f"{path}: the {what} file has no rows")
    widths = {b.shape[1] for b in blocks if len(b)}
    if len(widths) > 1:
        raise DorylusError(f"{path}: the {what} file's rows do not all have the same number of values ({sorted(widths)})")
    return np.concatenate(blocks)


def _open(path: Path) -> BinaryIO:
    try:
        return gzip.open(path, "rb") if path.suffix == ".gz" else open(path, "rb")
    except OSError as exc:
        raise DorylusError(f"cannot open {path}: {exc}") from None


def read_blocks(
    path: Path, dtype, what: str, columns: int | None = None, nonnegative: bool = False
) -> Iterator[tuple[int, np.ndarray]]:
    """(first line number, rows) per block of whole lines; a row has ``columns`` values
    (default: as many as the first data line). Line numbers count from 1, comments included."""
    line = 1
    with _open(path) as f:
        while True:
            # read into one buffer and finish the last line in place: no block-sized copies
            block = bytearray(BLOCK_BYTES)
            try:
                n = f.readinto(block)
                del block[n:]
                if n and block[-1] != ord("\n"):
                    block += f.readline()
            except (OSError, EOFError, gzip.BadGzipFile) as exc:
                raise DorylusError(f"{path}: cannot read ({exc}); the file may be truncated or corrupt") from None
            if not block:
                return
            columns = columns or _columns(block)
            if columns:
                yield line, _parse(block, line, path, dtype, what, columns, nonnegative)
            line += block.count(b"\n")


def _columns(block: bytes) -> int | None:
    """How many values the first data line has (None when the block has only comments)."""
    for raw in block.split(b"\n"):
        tokens = _tokens(raw)
        if tokens:
            return len(tokens)
    return None


def _tokens(raw: bytes) -> list[bytes]:
    raw = raw.strip()
    if not raw or raw[:1] in (b"#", b"%"):
        return []
    return [t for t in _SEPARATORS.split(raw) if t]


def _parse(block: bytes, first_line: int, path: Path, dtype, what: str, columns: int, nonnegative: bool) -> np.ndarray:
    data = _blank_comments(block)
    head = data[:8192].lstrip()  # a slice first: lstrip on the block would copy it
    delimiter = "," if b"," in head else "\t" if b"\t" in head else " "
    names = [f"c{i}" for i in range(columns)]
    arrow_type = pa.from_numpy_dtype(np.dtype(dtype))
    try:
        table = pacsv.read_csv(
            pa.BufferReader(pa.py_buffer(data)),
            read_options=pacsv.ReadOptions(column_names=names, block_size=1 << 22),
            parse_options=pacsv.ParseOptions(delimiter=delimiter, quote_char=False),
            convert_options=pacsv.ConvertOptions(column_types={n: arrow_type for n in names}),
        )
    except (pa.ArrowInvalid, pa.ArrowTypeError):  # ragged or non-numeric lines, odd spacing
        return _parse_slowly(block, first_line, path, dtype, what, columns, nonnegative)
    if any(table.column(n).null_count for n in names):  # an empty field ("1,,2") or "NA"/"nan" in ids
        return _parse_slowly(block, first_line, path, dtype, what, columns, nonnegative)
    out = np.empty((table.num_rows, columns), dtype=dtype)
    for i, name in enumerate(names):
        out[:, i] = table.column(name).to_numpy()
    if nonnegative and out.size and out.min() < 0:  # find the line to name
        return _parse_slowly(block, first_line, path, dtype, what, columns, nonnegative)
    return out


def _blank_comments(block: bytes) -> bytes:
    """``block`` with comment lines emptied (pyarrow skips empty lines).

    Comments are rare and mostly at the top, so this hops between markers with
    ``bytes.find`` (memchr) instead of running a regex over every byte.
    """
    pieces, kept, pos = [], 0, 0
    marks = {m: block.find(m) for m in (b"#", b"%")}
    while True:
        live = [i for i in marks.values() if i >= 0]
        if not live:
            break
        i = min(live)
        line_start = block.rfind(b"\n", 0, i) + 1
        line_end = block.find(b"\n", i)
        line_end = len(block) if line_end < 0 else line_end
        if not block[line_start:i].strip():  # the marker opens the line: a comment
            pieces.append(block[kept:line_start])
            kept = line_end
        pos = line_end if line_end > i else i + 1
        for m, j in marks.items():
            if 0 <= j < pos:
                marks[m] = block.find(m, pos)
    if not pieces:
        return block
    pieces.append(block[kept:])
    return b"".join(pieces)


def _integer(token: bytes) -> int:
    """An integer, also written as an integral float ("3.0"), as pandas' reader accepts."""
    try:
        return int(token)
    except ValueError:
        value = float(token)
        if not value.is_integer():
            raise
        return int(value)


def _parse_slowly(
    block: bytes, first_line: int, path: Path, dtype, what: str, columns: int, nonnegative: bool
) -> np.ndarray:
    convert = _integer if np.issubdtype(dtype, np.integer) else float
    kind = "integers" if convert is _integer else "numbers"
    rows = []
    for number, raw in enumerate(block.split(b"\n"), start=first_line):
        tokens = _tokens(raw)
        if not tokens:
            continue
        if len(tokens) != columns:
            raise DorylusError(
                f"{path}, line {number}: expected {columns} {kind} per {what} line, found {len(tokens)}: "
                f"{raw[:80].decode(errors='replace')!r}"
            )
        try:
            row = [convert(t) for t in tokens]
        except ValueError:
            raise DorylusError(
                f"{path}, line {number}: {raw[:80].decode(errors='replace')!r} is not "
                f"{'a number' if columns == 1 and convert is float else 'an integer' if columns == 1 else f'{columns} {kind}'}; "
                "fix that line"
            ) from None
        if nonnegative and min(row) < 0:
            raise DorylusError(f"{path}, line {number}: negative node id in {raw[:80].decode(errors='replace')!r}; ids start at 0")
        rows.append(row)
    try:
        return np.array(rows, dtype=dtype).reshape(-1, columns)
    except OverflowError:
        raise DorylusError(f"{path}: a value does not fit in {np.dtype(dtype)}") from None
