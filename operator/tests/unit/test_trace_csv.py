"""CSV trace reader: the fixture's columns, and one-line errors naming file, line and column."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from pfslayout.errors import InputError
from pfslayout.traces import OP_READ, OP_WRITE, read_csv_trace

DATA = Path(__file__).resolve().parents[1] / "data"
HEADER = "rank,op,offset,size,start,end,file\n"


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "t.csv"
    path.write_text(text)
    return path


def test_fixture_columns_and_nodes() -> None:
    t = read_csv_trace(DATA / "trace-small.csv")
    assert len(t) == 11
    assert t.files == ["/data/run/part.0", "/data/run/part.2", "/data/run/shared.dat"]
    assert t.rank.dtype == np.int32 and t.offset.dtype == np.int64 and t.op.dtype == np.uint8
    assert list(t.rank[:4]) == [0, 1, 2, 3]
    assert list(t.op[:4]) == [OP_WRITE] * 4 and t.op[4] == OP_READ
    assert t.size[0] == 1 << 20 and t.offset[3] == 3 << 20
    assert t.start[1] == pytest.approx(0.05) and t.end[8] == pytest.approx(6.0)
    assert [t.files[i] for i in t.file_id[[0, 4, 6]]] == ["/data/run/shared.dat", "/data/run/part.0",
        "/data/run/part.2"]
    # ranks 0,1 on node a and 2,3 on node b
    assert t.node_of_rank is not None and list(t.node_of_rank) == [0, 0, 1, 1]
    assert t.collective is None


def test_columns_in_any_order_and_collective_column(tmp_path: Path) -> None:
    path = write(tmp_path,
        "file,end,start,size,offset,op,rank,collective\n/f,2.5,1.5,10,0,WRITE,3,true\n/f,3,2.5,10,10,read,3,0\n")
    t = read_csv_trace(path)
    assert list(t.rank) == [3, 3] and list(t.op) == [OP_WRITE, OP_READ]
    assert list(t.collective) == [True, False]  # type: ignore[arg-type]
    assert t.node_of_rank is None


@pytest.mark.parametrize(
    ("body", "where", "words"),
    [
        ("0,read,0,10,0,1,/f\n0,read,x,10,1,2,/f\n", ":3: column offset", "whole number"),
        ("0,read,0,10,0,1,/f\n0,read,0,-5,1,2,/f\n", ":3: column size", "negative"),
        ("0,reed,0,10,0,1,/f\n", ":2: column op", "read or write"),
        ("0,read,0,10,2,1,/f\n", ":2: column end", "before start"),
        ("0,read,0,10,zero,1,/f\n", ":2: column start", "seconds"),
        ("0,read,0,10,nan,1,/f\n", ":2: column start", "finite"),
        ("-1,read,0,10,0,1,/f\n", ":2: column rank", "negative"),
        ("0,read,0,10,0,1\n", ":2", "6 fields"),
        ("0,read,0,10,0,1, \n", ":2: column file", "name the file"),
        ("0,read,0,1.5,0,1,/f\n", ":2: column size", "whole number"),
        ("0,read,0,10,0,1,/f\n1,read,99999999999999999999,10,0,1,/f\n", ":3: column offset", "below 2^63"),
    ],
)
def test_malformed_rows_name_line_and_column(tmp_path: Path, body: str, where: str, words: str) -> None:
    path = write(tmp_path, HEADER + body)
    with pytest.raises(InputError) as err:
        read_csv_trace(path)
    message = str(err.value)
    assert "\n" not in message
    assert f"{path}{where}" in message, message
    assert words in message


def test_header_problems(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r":1: header lacks column\(s\) end"):
        read_csv_trace(write(tmp_path, "rank,op,offset,size,start,file\n0,read,0,1,0,/f\n"))
    with pytest.raises(InputError, match=r":1: column 8: unknown column 'host'"):
        read_csv_trace(write(tmp_path, HEADER.strip() + ",host\n0,read,0,1,0,1,/f,a\n"))
    with pytest.raises(InputError, match=r"column rank: appears twice"):
        read_csv_trace(write(tmp_path, "rank," + HEADER))
    # a trace without header: the first data row is read as the header and rejected
    with pytest.raises(InputError, match="unknown column"):
        read_csv_trace(write(tmp_path, "0,read,0,10,0,1,/f\n"))


def test_empty_and_header_only_are_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="is empty"):
        read_csv_trace(write(tmp_path, ""))
    with pytest.raises(InputError, match="no requests"):
        read_csv_trace(write(tmp_path, HEADER + "\n\n"))
    with pytest.raises(InputError, match="no requests"):
        read_csv_trace(write(tmp_path, HEADER))
    with pytest.raises(InputError, match="does not exist"):
        read_csv_trace(tmp_path / "missing.csv")


def test_a_rank_on_two_nodes_is_rejected(tmp_path: Path) -> None:
    path = write(tmp_path, HEADER.strip() + ",node\n0,read,0,1,0,1,/f,a\n1,read,0,1,0,1,/f,a\n0,read,1,1,1,2,/f,b\n")
    with pytest.raises(InputError, match=r":(2|4): column node: differs"):
        read_csv_trace(path)


def test_fast_and_careful_paths_agree(tmp_path: Path) -> None:
    import pfslayout.traces.csvtrace as csvtrace

    plain = DATA / "trace-small.csv"
    fast = csvtrace._read_fast(plain)
    careful = csvtrace._read_careful(plain)
    for name in ("rank", "op", "offset", "size", "start", "end", "file_id", "node_of_rank"):
        assert np.array_equal(getattr(fast, name), getattr(careful, name)), name
    assert fast.files == careful.files
    # CRLF line ends, a blank line and a quoted path with a comma: the careful reader takes these
    odd = write(tmp_path, HEADER.replace("\n", "\r\n") + '0,read,0,10,0,1,"/d/a,b"\r\n\r\n1,write,5,5,0.5,2,/d/c\r\n')
    t = read_csv_trace(odd)
    assert t.files == ["/d/a,b", "/d/c"] and list(t.rank) == [0, 1]


def test_surplus_field_is_rejected_not_ignored(tmp_path: Path) -> None:
    path = write(tmp_path, HEADER + "0,read,0,10,0,1,/f\n0,read,10,10,1,2,/f,extra\n")
    with pytest.raises(InputError, match=r":3: has 8 fields, the header has 7"):
        read_csv_trace(path)
