"""What a Task line asks for, as a few integers: its shape, wording, values and kind.

Two runs did the same task when their Task lines ask for the same thing, even if they spell
it differently ("Summarise" / "summarize"), drop a word ("the") or name another id ("Review
PR 4411" / "Review PR 4415"). So a task is read as tokens; numbers, ids, hashes, dates,
links and quoted names become *slots* (their values are kept apart, to be counted); the
other words are stemmed and stop words dropped. What is left is the task's *shape*: the set
of its significant words (its first, the task's *kind*, counted twice) plus the kinds of its
slots.

Everything is reduced to 64-bit fingerprints (BLAKE2b, so the same in every process, unlike
``hash``): the analyst keeps a handful of integers per entry, never token lists. A shape's
fingerprint is the sum of its words' fingerprints, so the shape with one word left out is a
subtraction away; those *probes* are how near-duplicates meet without comparing pairs.
"""

from __future__ import annotations

import re
from hashlib import blake2b
from typing import NamedTuple

from axe.adapters.llm.offline.reading import text_of

FINGERPRINT_BITS = 64
_MASK = (1 << FINGERPRINT_BITS) - 1
_NEAR_MATCH_WORDS = 3
WORD_MEMO_LIMIT = 1 << 15
LINE_MEMO_LIMIT = 1 << 12

_TOKEN = re.compile(
    r"(?P<id>[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})(?![^\W_])"
    r"|(?P<date>(?:\d{4}-\d\d-\d\d(?:[t ]\d\d:\d\d(?::\d\d(?:[.,]\d+)?)?(?:z|[+-]\d\d:?\d\d)?)?"
    r"|\d{1,2}[/.]\d{1,2}[/.]\d{2,4}|\d{1,2}:\d\d(?::\d\d)?)(?![^\W_]))"
    r"|(?P<link>[a-z][a-z0-9+.-]*://[^\s\"'`<>]+)"
    r"|(?P<name>\"[^\"\n]{1,120}\"|\u201c[^\u201d\n]{1,120}\u201d|`[^`\n]{1,120}`"
    r"|\u00ab[^\u00bb\n]{1,120}\u00bb|(?<![^\W_])['\u2018][^\n]{1,120}?['\u2019](?![^\W_]))"
    r"|(?P<word>[^\W_]+(?:['\u2019][^\W_]+)*)"
)
_APOSTROPHES = str.maketrans("", "", "'\u2019")
# The fast path for plain ASCII lines (most of them): a line with no digit, quote or colon
# names no value, and its words are the runs of letters, digits and apostrophes.
_ASCII_WORDS = bytes(
    byte if chr(byte).isalnum() or byte == ord("'") else 0x20 for byte in range(256)
)
_ALL_BUT_VALUE_HINTS = bytes(byte for byte in range(256) if chr(byte) not in "0123456789\"`':")
_WORD_ONLY = re.compile(r"[^\W_]+")
_HEX = re.compile(r"(?:0x)?[0-9a-f]+")
_HEX_ID_LENGTH = 7
_LONG_NUMBER = re.compile(r"\d{4}")
_DIGIT_RUN = re.compile(r"\d+")
_DIGIT_RUNS_OF_AN_ID = 3
_BRITISH_ENDINGS = (("isation", "ization"), ("ising", "izing"), ("ised", "ized"), ("ise", "ize"))
_STOP_WORDS = frozenset(
    {"a", "an", "the", "and", "or", "of", "for", "to", "in", "on", "at", "by", "with", "from"}
    | {"into", "about", "please", "this", "that", "these", "those", "my", "our", "your", "its"}
    | {"it", "is", "are", "be", "me", "us"}
)

SLOT_NAMES = {
    "number": "numbers",
    "id": "ids",
    "date": "dates",
    "link": "links",
    "name": "quoted names",
}


def fingerprint(text: str) -> int:
    """A 64-bit fingerprint of ``text`` that no process, seed or platform changes."""
    return _fingerprint_bytes(text.encode())


def _fingerprint_bytes(data: bytes) -> int:
    return int.from_bytes(blake2b(data, digest_size=8).digest(), "little")


def normalise(text: str) -> str:
    """Case, spacing, punctuation, apostrophes folded: ``"Review  PR #42!"`` -> ``review pr 42``."""
    return " ".join(_WORD_ONLY.findall(text.lower().translate(_APOSTROPHES)))


def stem(word: str) -> str:
    """A crude stem, used only to match wordings: plurals and -ise/-ize spellings fold."""
    if word.isdigit() or len(word) <= 3:
        return word
    for british, american in _BRITISH_ENDINGS:
        if word.endswith(british) and len(word) > len(british) + 2:
            word = word[: -len(british)] + american
            break
    return word[:-1] if word.endswith("s") and not word.endswith("ss") else word


class TaskPrint(NamedTuple):
    """What a Task line asks for, and how, as integers.

    ``shape`` identifies the task; ``kind`` is the fingerprint of its first significant
    word, ``kind_word`` that word as written; ``probes`` are the fingerprints a
    near-duplicate would share with it (the shape itself first); ``wording`` is how it was
    put (values folded, stop words kept) and ``values`` which values it named (0: none).
    """

    shape: int
    kind: int
    kind_word: str
    probes: tuple[int, ...]
    wording: int
    values: int


class Tokens(NamedTuple):
    """A task line taken apart: its plain words, and the values it named with their kinds."""

    words: list[str]
    slot_kinds: list[str]
    slot_values: list[str]
    folded: list[str]
    plain: list[str]


_UNREAD = TaskPrint(0, 0, "", (), 0, 0)


class WordBook:
    """Reads Task lines, remembering recent lines and the words it has stemmed.

    One book serves one analysis. Its memos are capped, so a log of endless unique words
    costs time, never memory; the fingerprints, and so the report, are the same either way.
    """

    def __init__(
        self, *, word_limit: int = WORD_MEMO_LIMIT, line_limit: int = LINE_MEMO_LIMIT
    ) -> None:
        self._words: dict[str | bytes, int] = {}
        self._word_limit = word_limit
        self._lines: dict[bytes, TaskPrint | None] = {}
        self._line_limit = line_limit

    def read(self, raw: bytes) -> TaskPrint | None:
        """What the Task line ``raw`` asks; None when it has no word or value at all."""
        known = self._lines.get(raw, _UNREAD)
        if known is not _UNREAD:
            return known
        if len(self._lines) >= self._line_limit:
            self._lines.clear()
        task = self._lines[raw] = self._read(raw)
        return task

    def _read(self, raw: bytes) -> TaskPrint | None:
        plain = _plain_words(raw)
        if plain is not None:  # most lines: ASCII words that name no value
            wording = _fingerprint_bytes(b" ".join(plain).replace(b"'", b""))
            task = self._print(plain, [], wording, 0)
            return task or _exact_print(tokenise(text_of(raw)), wording, 0)
        tokens = tokenise(text_of(raw))
        wording, values = _wording_and_values(tokens)
        task = self._print(tokens.words, tokens.slot_kinds, wording, values)
        return task or _exact_print(tokens, wording, values)

    def _print(
        self, words: list[bytes] | list[str], slot_kinds: list[str], wording: int, values: int
    ) -> TaskPrint | None:
        """The print of a task with at least one significant word; None without one.

        Its kind (the first significant word) counts twice in the shape and no probe leaves
        it out, so only tasks of one kind are ever one job: "Deep review of PR 300" is no
        rewording of "Review PR 320", and each run of a job counts for that job's kind.
        """
        fingerprints = self._fingerprints(words)
        distinct = set(fingerprints)
        distinct.discard(0)
        if not distinct:
            return None
        kind = next(filter(None, fingerprints))  # the first significant word's
        signature = fingerprint(" ".join(sorted(slot_kinds))) if slot_kinds else 0
        shape = (sum(distinct) + kind + signature) & _MASK
        probes: tuple[int, ...] = (shape,)
        if len(distinct) >= _NEAR_MATCH_WORDS:
            probes += tuple([(shape - fp) & _MASK for fp in distinct if fp != kind])
        kind_word = words[fingerprints.index(kind)]
        if isinstance(kind_word, bytes):
            kind_word = kind_word.decode()
        return TaskPrint(shape, kind, kind_word, probes, wording, values)

    def _fingerprints(self, words: list[bytes] | list[str]) -> list[int]:
        """Each word's stem fingerprint (0 for a stop word), from the memo where it can."""
        fingerprints = [self._words.get(word, -1) for word in words]
        if -1 in fingerprints:
            fingerprints = [self._word(word) for word in words]
        return fingerprints

    def _word(self, word: str | bytes) -> int:
        """The fingerprint of the word's stem; 0 for a stop word."""
        known = self._words.get(word)
        if known is not None:
            return known
        text = word.decode() if isinstance(word, bytes) else word
        plain = text.translate(_APOSTROPHES)
        value = 0 if plain in _STOP_WORDS else fingerprint(stem(plain))
        if len(self._words) < self._word_limit:
            self._words[word] = value
        return value


def _plain_words(raw: bytes) -> list[bytes] | None:
    """The lower-cased words of an ASCII line that names no value; None for other lines."""
    if not raw.isascii():
        return None
    lowered = raw.lower()
    hints = lowered.translate(None, _ALL_BUT_VALUE_HINTS)
    if hints.strip(b"'"):
        return None
    spaced = b" " + lowered.translate(_ASCII_WORDS)
    if hints and (b" '" in spaced or b"''" in spaced):
        return None  # an apostrophe that may open a quote, or is no apostrophe
    return spaced.split()


def kind_name(word: str) -> str:
    """How a task kind is shown: the stem of the task's first significant word."""
    return stem(word.translate(_APOSTROPHES))


def tokenise(task: str) -> Tokens:
    """Words and values of ``task``, lower-cased, in order."""
    tokens = Tokens([], [], [], [], [])
    for match in _TOKEN.finditer(task.lower()):
        text = match.group()
        plain = text.translate(_APOSTROPHES)
        tokens.plain.append(plain)
        slot = _slot_kind(match.lastgroup or "word", text)
        if slot:
            tokens.slot_kinds.append(slot)
            tokens.slot_values.append(text)
            tokens.folded.append(f"<{slot}>")
        else:
            tokens.words.append(text)
            tokens.folded.append(plain)
    return tokens


def _slot_kind(kind: str, text: str) -> str:
    """Which kind of value a token is, or "" for a plain word."""
    if kind != "word":
        return kind
    if text.isalpha():
        return ""
    if text.isdigit():
        return "number"
    return "id" if _is_id(text) else ""


def _is_id(word: str) -> bool:
    """``pr4411``, ``a1b2c3d``, ``0x1f``, ``x9k2m7`` are ids; ``ec2``, ``k8s``, ``sha256`` names."""
    if _HEX.fullmatch(word) and (len(word) >= _HEX_ID_LENGTH or word.startswith("0x")):
        return True
    return bool(_LONG_NUMBER.search(word)) or len(_DIGIT_RUN.findall(word)) >= _DIGIT_RUNS_OF_AN_ID


def _exact_print(tokens: Tokens, wording: int, values: int) -> TaskPrint | None:
    """A task with no significant word ("4411", "the", a quoted question) only matches
    itself: folding its values would leave nothing that says what was asked. A line of
    punctuation alone is no task at all."""
    if not _WORD_ONLY.search(" ".join(tokens.plain)):
        return None
    exact = fingerprint("=" + " ".join(tokens.plain))
    return TaskPrint(exact, 0, "", (exact,), wording, values)


def _wording_and_values(tokens: Tokens) -> tuple[int, int]:
    values = fingerprint("\x1f".join(tokens.slot_values)) if tokens.slot_values else 0
    return fingerprint(" ".join(tokens.folded)), values
