"""What a Task line asks, however spelled ("Summarise" / "summarize"), with a word dropped
("the") or another id ("Review PR 4411" / "4415"): numbers, ids, hashes, dates, links and
quoted names are *slots* (values counted apart), words are stemmed, stop words dropped. The
*kind* is the first significant word. A *shape* sums the 64-bit fingerprints (BLAKE2b: the
same in every process) of the words (the kind twice) and slot kinds, so the shape with a word
left out, a *probe* that near-duplicates share, is a subtraction away."""

from __future__ import annotations

import re
from functools import lru_cache
from hashlib import blake2b
from typing import NamedTuple

from axe.adapters.llm.offline.reading import text_of

_MASK = (1 << 64) - 1
_TOKEN = re.compile(
    r"(?P<id>[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12})(?![^\W_])"
    r"|(?P<date>(?:\d{4}-\d\d-\d\d(?:[t ]\d\d:\d\d(?::\d\d(?:[.,]\d+)?)?(?:z|[+-]\d\d:?\d\d)?)?"
    r"|\d{1,2}[/.]\d{1,2}[/.]\d{2,4}|\d{1,2}:\d\d(?::\d\d)?)(?![^\W_]))"
    r"|(?P<link>[a-z][a-z0-9+.-]*://[^\s\"'`<>]+)"
    r"|(?P<name>\"[^\"\n]{1,120}\"|\u201c[^\u201d\n]{1,120}\u201d|`[^`\n]{1,120}`"
    r"|\u00ab[^\u00bb\n]{1,120}\u00bb|(?<![^\W_])['\u2018][^\n]{1,120}?['\u2019](?![^\W_]))"
    r"|(?P<word>[^\W_]+(?:['\u2019][^\W_]+)*)"
)
_VALUE_HINT = re.compile(r"[\d\"'`:\u2018\u2019\u201c\u00ab]")  # a line without one is words
_WORD = re.compile(r"[^\W_]+")
_APOSTROPHES = str.maketrans("", "", "'\u2019")
_HEX_ID = re.compile(r"0x[0-9a-f]+|[0-9a-f]{7,}")
_ID_DIGITS = re.compile(r"\d{4}|\d+\D+\d+\D+\d")  # a long number, or three runs of digits
_BRITISH_ENDINGS = (("isation", "ization"), ("ising", "izing"), ("ised", "ized"), ("ise", "ize"))
_STOP_WORDS = frozenset(
    {"a", "an", "the", "and", "or", "of", "for", "to", "in", "on", "at", "by", "with", "from"}
    | {"into", "about", "please", "this", "that", "these", "those", "my", "our", "your", "its"}
    | {"it", "is", "are", "be", "me", "us"}
)
SLOT_NAMES = dict(number="numbers", id="ids", date="dates", link="links", name="quoted names")


class Task(NamedTuple):  # what a Task line asks
    shape: int
    kind: str  # "" for a task of values alone
    probes: tuple[int, ...]  # the shape first
    wording: str  # how it was put, values folded
    values: str  # the values it named


@lru_cache(maxsize=1 << 15)
def fingerprint(text: str) -> int:
    """A 64-bit fingerprint of ``text`` that no process, seed or platform changes."""
    return int.from_bytes(blake2b(text.encode(), digest_size=8).digest(), "little")


def normalise(text: str) -> str:
    """Case, spacing, punctuation, apostrophes folded: ``"Review  PR #42!"`` -> ``review pr 42``."""
    return " ".join(_WORD.findall(text.lower().translate(_APOSTROPHES)))


@lru_cache(maxsize=1 << 15)
def stem(word: str) -> str:
    """A crude stem, used only to match wordings: plurals and -ise/-ize spellings fold; "" for
    a stop word."""
    if word in _STOP_WORDS:
        return ""
    if word.isdigit() or len(word) <= 3:
        return word
    for british, american in _BRITISH_ENDINGS:
        if word.endswith(british) and len(word) > len(british) + 2:
            word = word[: -len(british)] + american
            break
    return word[:-1] if word.endswith("s") and not word.endswith("ss") else word


@lru_cache(maxsize=1 << 12)  # logs repeat their tasks, and a repeat costs a lookup
def read_task(raw: bytes) -> Task | None:
    """What the Task line ``raw`` asks; None when it holds no word or value at all. No probe
    leaves the kind out, so only tasks of one kind are ever one job: "Deep review of PR 300"
    is no rewording of "Review PR 320"."""
    text = text_of(raw).lower()
    words, folded, kinds, values = tokenise(text)
    wording, named, stems = " ".join(folded), "\x1f".join(values), list(map(stem, words))
    if not any(stems):  # a task of values alone matches only itself; punctuation is no task
        shape = fingerprint("=" + (exact := normalise(text)))
        return Task(shape, "", (shape,), wording, named) if exact else None
    kind = next(filter(None, stems))
    kind_print, distinct = fingerprint(kind), {fingerprint(word) for word in stems if word}
    slots = fingerprint(" ".join(sorted(kinds))) if kinds else 0
    shape = (sum(distinct) + kind_print + slots) & _MASK
    probes = [(shape - word) & _MASK for word in distinct if word != kind_print]
    return Task(shape, kind, (shape, *probes) if len(distinct) >= 3 else (shape,), wording, named)


def tokenise(text: str) -> tuple[list[str], list[str], list[str], list[str]]:
    """The words of ``text`` (lower-cased; apostrophes dropped), every token with values
    folded (``<kind>``), and the kinds of its values and the values as written."""
    if not _VALUE_HINT.search(text):  # words alone, as most lines are
        return (words := _WORD.findall(text)), words, [], []
    words, folded, kinds, values = [], [], [], []
    for found in _TOKEN.finditer(text):
        if kind := _slot(found):
            kinds.append(kind)
            values.append(found.group())
            folded.append(f"<{kind}>")
        else:
            words.append(found.group().translate(_APOSTROPHES))
            folded.append(words[-1])
    return words, folded, kinds, values


def value_kind(wording: str) -> str:
    """What the values of a task are called in the report: their kind, if they share one."""
    kinds = set(tokenise(wording.lower())[2])
    return SLOT_NAMES[kinds.pop()] if len(kinds) == 1 else "values"


def _slot(found: re.Match[str]) -> str:
    """Which kind of value a token is: ``pr4411``, ``a1b2c3d``, ``0x1f`` are ids, while
    ``ec2``, ``k8s``, ``sha256`` are words."""
    text, kind = found.group(), found.lastgroup or ""
    if kind != "word" or text.isalpha():
        return "" if kind == "word" else kind
    if text.isdigit():
        return "number"
    return "id" if _HEX_ID.fullmatch(text) or _ID_DIGITS.search(text) else ""
