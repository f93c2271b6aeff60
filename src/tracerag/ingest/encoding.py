"""Bytes to text for the readers: the encoding a file is in, and every byte it cannot decode replaced and counted.

A byte that cannot be decoded becomes U+FFFD and is counted, so it costs a warning, never its document. How the
encoding of a file is chosen (`choose`), first rule that applies:

1. the encoding the user names (`--encoding`: any Python codec name, `utf-8`, `latin-1`, `cp1252`, ...);
2. a byte-order mark (UTF-8, UTF-16, UTF-32);
3. UTF-16 without a byte-order mark: NUL bytes at one parity of positions (`_utf16`), confirmed by
   charset-normalizer reading the sample as UTF-16LE or BE without mess. The NUL pattern is needed because
   UTF-16 of text in the ASCII range, Cyrillic included, is valid UTF-8 (a NUL every other byte) and would never
   reach the detector of step 6, which reads UTF-16 without a mark well (French, German, Russian, Chinese);
4. valid UTF-8 (plain ASCII included);
5. mostly UTF-8: at least as many valid multi-byte UTF-8 characters as bytes that are not UTF-8 (a UTF-8 text
   with a damaged byte, or a line pasted from elsewhere) is read as UTF-8 with those bytes replaced. A valid
   multi-byte sequence is strong evidence for UTF-8 (single-byte text seldom forms one by chance), an invalid
   byte evidence against; ASCII is valid in every candidate and says nothing;
6. charset-normalizer on the first MiB. On a short text many encodings decode equally well (cp1250, cp1252 and
   iso8859-15 all read "Musée" without a flaw, and the detector may name any of them): windows-1252 is taken
   when it reads the bytes about as cleanly as the best candidate (margin below), as the WHATWG Encoding Standard
   falls back to it for unlabelled legacy text (it is also a superset of Latin-1's printable range); else the
   detector's best (also when the detector has no verdict at all, as on some short OCR pages);
7. nothing fits (binary data): UTF-8 with replacement, which the readers then reject as not text.

Steps 5 and 6 guess a legacy encoding; JSON is UTF-8 (RFC 8259), so its readers ask for steps 1 to 4 only
(`legacy=False`), as RFC 4627 had JSON readers tell UTF-16 from its NUL bytes.

Whatever the encoding, decoded bytes that are mostly replacements and control characters are binary data, not
text: `binary_reason` is that one check, used by every reader (a text file on its whole text; a CSV or JSON
Lines file on its first bytes, before any record is read), with the same message.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from charset_normalizer import from_bytes

from tracerag.errors import ConfigError, RecordError

SAMPLE_BYTES = 1 << 20  # what detection reads: enough for the detector, bounded for a 10 GB file
REPLACEMENT = "\ufffd"
# Share of replaced bytes and control characters above which decoded "text" is binary data (random bytes: ~60%).
BINARY_SHARE = 0.3

_HANDLER = "tracerag.escape"
_ESCAPED = re.compile("[\udc00-\udcff]")
_NON_ASCII = re.compile("[^\x00-\x7f\udc00-\udcff]")
_CONTROL = re.compile("[\x00-\x08\x0b\x0e-\x1f\x7f]")
_BOMS = (  # UTF-32's little-endian mark starts with UTF-16's: longest first
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
_PREFERRED = "cp1252"
# How much more "chaos" (charset-normalizer's mess ratio) windows-1252 may show than the cleanest candidate and
# still be taken. The detector's "coherence" (a language fit) is left out: on short OCR pages it favoured DOS and
# Mac code pages (cp775, mac_latin2) over cp1252 for plain French and German, and a line-end "¬" next to a letter
# is mess in cp1252 but a letter (Ž) in iso8859-10, which then won by 0.009 to 0.025 (tests/ingest/fuzz.py, seeds
# 1-9). Text in another script reads as mess in cp1252 and never comes close.
_CHAOS_MARGIN = 0.05
_TEXT_CHAOS = 0.2  # the detector's own cut-off: above it, bytes are not text in that encoding
# Share of one parity's bytes that must be NUL for UTF-16 without a byte-order mark to be considered: Russian text
# has about one character in six below U+0100 (its spaces and punctuation), French nearly all; binary data about
# one in 256.
_UTF16_NULS = 0.05


def _escape(err: UnicodeError) -> tuple[str, int]:
    """Like Python's `surrogateescape`, for every codec (UTF-16 refuses that one): each undecodable byte becomes
    a lone surrogate, which valid decoded text never holds, so replaced bytes can be counted exactly."""
    if not isinstance(err, UnicodeDecodeError):
        raise err
    return "".join(chr(0xDC00 + b) for b in err.object[err.start : err.end]), err.end


codecs.register_error(_HANDLER, _escape)


@dataclass(frozen=True, slots=True)
class Encoding:
    """The codec a file is decoded with, and why it was chosen."""

    codec: str  # a Python codec name
    how: str  # "asked", "byte-order mark", "utf-8", "mostly utf-8", "detected", "fallback"

    @property
    def guessed(self) -> bool:
        """Detected (not UTF-8, not named, no byte-order mark): the user should hear of it."""
        return self.how in ("detected", "fallback")

    @property
    def label(self) -> str:
        """The name said to the user: "UTF-8", "UTF-16", else the codec ("cp1252", "iso8859-1")."""
        return _LABELS.get(self.codec, self.codec)

    def describe(self) -> str:
        """How the text was decoded, for a warning: "cp1252 (detected)"."""
        why = {"mostly utf-8": "the rest is UTF-8", "fallback": "no encoding fits", "asked": "--encoding"}
        return self.label if self.how == "utf-8" else f"{self.label} ({why.get(self.how, self.how)})"


UTF8 = Encoding("utf-8", "utf-8")
_LABELS = {"utf-8": "UTF-8", "utf-8-sig": "UTF-8", "utf-16": "UTF-16", "utf-32": "UTF-32"}
_LABELS |= {"utf-16-le": "UTF-16LE", "utf-16-be": "UTF-16BE"}


def asked_encoding(name: str | None) -> Encoding | None:
    """The encoding a user named, checked; None when none was named. A name Python does not know is a ConfigError."""
    if name is None or not name.strip():
        return None
    try:
        codec = codecs.lookup(name.strip()).name
    except LookupError:
        raise ConfigError(f"unknown encoding {name!r}; expected a codec name such as utf-8, latin-1, cp1252") from None
    if codec == "utf-8":
        codec = "utf-8-sig"  # a UTF-8 byte-order mark is not text
    return Encoding(codec, "asked")


def choose(sample: bytes, *, whole: bool, asked: Encoding | None = None, legacy: bool = True) -> Encoding:
    """The encoding of a file whose first bytes are `sample` (`whole`: the sample is the entire file; `legacy`:
    guess a legacy encoding for bytes that are not UTF-8, else keep UTF-8 and let them be replaced)."""
    if asked is not None:
        return asked
    for bom, codec in _BOMS:
        if sample.startswith(bom):
            return Encoding(codec, "byte-order mark")
    utf16 = _utf16(sample, whole=whole)
    if utf16 is not None:
        return Encoding(utf16, "detected")
    text = codecs.getincrementaldecoder("utf-8")(_HANDLER).decode(sample, final=whole)
    bad = len(_ESCAPED.findall(text))
    if not bad or not legacy:
        return UTF8
    if len(_NON_ASCII.findall(text)) >= bad:
        return Encoding("utf-8", "mostly utf-8")
    detected = _detect(sample)
    return Encoding(detected, "detected") if detected else Encoding("utf-8", "fallback")


def _utf16(sample: bytes, *, whole: bool) -> str | None:
    """ "utf-16-le" or "utf-16-be" for UTF-16 text without a byte-order mark, else None.

    The shape first: text in UTF-16 has a NUL high byte for every character below U+0100 (letters of Latin
    scripts, and the spaces, digits and punctuation of every script), at odd positions in little-endian, even in
    big-endian, and almost none at the other parity; UTF-8 text holds no NUL, random bytes hold few, at both.
    Then the detector confirms: charset-normalizer reads the sample in that codec with little mess (a file of
    16-bit numbers has the shape, and reads as a jumble of scripts). The detector alone would not do: it is asked
    only for bytes that are not UTF-8 (step 6), and UTF-16 of ASCII-range text is valid UTF-8."""
    even, odd = sample[0::2].count(0), sample[1::2].count(0)
    high, low = max(even, odd), min(even, odd)
    if high == 0 or high < _UTF16_NULS * (len(sample) // 2) or low * 2 > high:
        return None
    codec = "utf-16-le" if odd > even else "utf-16-be"
    try:  # incremental: a sample cut inside a character is not an error
        text = codecs.getincrementaldecoder(codec)("strict").decode(sample, final=whole)
    except UnicodeDecodeError:
        return None
    best = from_bytes(text.encode(codec), cp_isolation=[codec], threshold=1.0).best()
    return codec if best is not None and best.chaos < _TEXT_CHAOS and not binary_reason(text, 0, len(sample)) else None


def _detect(sample: bytes) -> str | None:
    matches = list(from_bytes(sample))
    lowest = min((m.chaos for m in matches), default=_TEXT_CHAOS)
    western = _chaos(sample, _PREFERRED)
    if western is not None and western < _TEXT_CHAOS and western <= lowest + _CHAOS_MARGIN:
        return _PREFERRED
    return codecs.lookup(matches[0].encoding).name if matches else None


def _chaos(sample: bytes, codec: str) -> float | None:
    """charset-normalizer's mess ratio of `sample` read in `codec`, measured on its own (None: it cannot be read).
    Asked for alone, because the detector's full run drops candidates on a sampled chunk and dropped cp1252 for
    plain French text that it read with a ratio of 0.021, keeping cp775 at 0.079."""
    try:
        sample.decode(codec)
    except UnicodeDecodeError:
        return None
    best = from_bytes(sample, cp_isolation=[codec], threshold=1.0).best()
    return best.chaos if best is not None else None


class Lines:
    """The lines of a text file in `codec`, ends kept (a line ends at \\n, \\r\\n or a lone \\r, as old Mac files
    have it), streamed.

    Decoded strictly, at full speed, until a byte fails; then the file is read again from the line it is in with
    the handler that marks undecodable bytes (`marking` turns True), so only then must lines be searched for marks
    (`replace_marks`). `skip` lines are passed over first.
    """

    def __init__(self, path: Path, codec: str, *, skip: int = 0):
        self.path = path
        self.codec = codec
        self.skip = skip
        self.marking = False

    def __iter__(self) -> Iterator[str]:
        done = self.skip
        try:
            with open(self.path, encoding=self.codec, errors="strict", newline="") as fh:
                for _ in range(self.skip):
                    next(fh, None)
                for line in fh:
                    done += 1
                    yield line
            return
        except UnicodeDecodeError:
            pass
        self.marking = True
        with open(self.path, encoding=self.codec, errors=_HANDLER, newline="") as fh:
            for _ in range(done):
                next(fh, None)
            yield from fh


def sniff(
    path: Path | str, asked: Encoding | None = None, *, legacy: bool = True, size: int = SAMPLE_BYTES
) -> Encoding | RecordError:
    """For a reader that streams a file record by record: the file's encoding, chosen from its first `size` bytes
    as `choose` does; or the one `RecordError` for the file when it cannot be read or those bytes are binary
    data. A file of data, not text, is refused whole, with the message a text file gets, rather than read as
    hundreds of garbage records."""
    try:
        with Path(path).open("rb") as fh:
            sample = fh.read(size + 1)
    except OSError as e:
        return RecordError(f"cannot read: {e.strerror or e}", file=str(path))
    whole = len(sample) <= size
    sample = sample[:size]
    enc = choose(sample, whole=whole, asked=asked, legacy=legacy)
    text, replaced, _ = decode(sample, enc)
    binary = binary_reason(text, replaced, len(sample), enc, whole=whole)
    return enc if binary is None else RecordError(binary, file=str(path))


def bom_free(enc: Encoding) -> str:
    """The codec to read `enc` text files with: a UTF-8 byte-order mark is not part of the first line."""
    return "utf-8-sig" if enc.codec == "utf-8" else enc.codec


def replace_marks(text: str) -> tuple[str, int, int | None]:
    """(text with every marked byte replaced by U+FFFD, how many, index of the first) for text decoded here."""
    first = _ESCAPED.search(text)
    if first is None:
        return text, 0, None
    fixed, count = _ESCAPED.subn(REPLACEMENT, text)
    return fixed, count, first.start()


def first_marked_byte(text: str) -> int | None:
    """The value of the first undecodable byte marked in `text` (before `replace_marks`), for an error message."""
    m = _ESCAPED.search(text)
    return ord(m.group(0)) - 0xDC00 if m else None


def decode(raw: bytes, enc: Encoding) -> tuple[str, int, int | None]:
    """`raw` as text in `enc`: (text, bytes replaced, index of the first replacement)."""
    try:
        return raw.decode(enc.codec), 0, None  # the common case, at C speed
    except UnicodeDecodeError:
        return replace_marks(raw.decode(enc.codec, _HANDLER))


def decode_file(raw: bytes, asked: Encoding | None = None) -> tuple[Encoding, str, int, int | None]:
    """A whole file's bytes as text: (encoding chosen, text, bytes replaced, index of the first replacement).
    Plain UTF-8, by far the common case, is decoded once, at C speed, without a detection pass."""
    # (A NUL may be UTF-16 without a byte-order mark, which is valid UTF-8 when its text is ASCII: `choose` decides.)
    if asked is None and not raw.startswith(tuple(bom for bom, _ in _BOMS)) and raw.find(0, 0, SAMPLE_BYTES) < 0:
        try:
            return UTF8, raw.decode("utf-8"), 0, None
        except UnicodeDecodeError:
            pass
    enc = choose(raw[:SAMPLE_BYTES], whole=len(raw) <= SAMPLE_BYTES, asked=asked)
    return (enc, *decode(raw, enc))


def binary_reason(text: str, replaced: int, size: int, enc: Encoding = UTF8, *, whole: bool = True) -> str | None:
    """Why `size` bytes decoded as `enc` into `text` (with `replaced` bytes replaced) are data, not text, or None
    when they are text: replacements and control characters together above `BINARY_SHARE` of the characters.
    The one check and the one message for every reader (`whole`: the bytes are the whole file, else its start)."""
    controls = len(_CONTROL.findall(text))
    if not text or replaced + controls <= BINARY_SHARE * len(text):
        return None
    parts = [f"{replaced:,} of {size:,} bytes are not {enc.label}"] if replaced else []
    if controls:
        parts.append(f"{controls:,} of {len(text):,} characters are control characters")
    return f"binary data, not text: {' and '.join(parts)}{'' if whole else f' in its first {size:,} bytes'}"


def replaced_note(count: int, enc: Encoding) -> str:
    """The warning for `count` bytes of text decoded as `enc` that were replaced."""
    what = f"{count} byte{'' if count == 1 else 's'} that {'is' if count == 1 else 'are'} not {enc.label}"
    if enc.how == "asked":
        return f"{what} replaced by U+FFFD (--encoding {enc.label})"
    if enc.how in ("detected", "fallback"):
        return f"{what} replaced by U+FFFD; decoded as {enc.describe()}, pass --encoding to choose another"
    return f"{what} replaced by U+FFFD; if the file is in another encoding, pass --encoding"


def choice_note(enc: Encoding) -> str:
    """The warning for a file decoded with an encoding that was detected, not named."""
    return f"not UTF-8: decoded as {enc.describe()}; pass --encoding to choose another"
