"""Texts of each kind a memory log may hold, generated from a seed, for measuring the token
estimate against a real tokenizer.

Each generator takes a seeded ``random.Random`` and returns the bytes of one document of its
kind, from a few bytes to a few kilobytes. The kinds are the ones a log's results carry or
an agent pastes into them: English prose from a word list (common words often, rare long
ones seldom, as in real text), code in three languages' shapes, JSON documents, numbers and
tables, hex digests, base64, CJK sentences, emoji runs, memory-format logs of these, and
byte soup (invalid UTF-8 included).
"""

from __future__ import annotations

import base64
import functools
import json
import random
import string
from collections.abc import Callable

_COMMON_TEXT = """the of and to a in is it you that he was for on are with as I his they be at one
have this from or had by not word but what some we can out other were all there when up use
your how said an each she which do their time if will way about many then them write would
like so these her long make thing see him two has look more day could go come did number
sound no most people my over know water than call first who may down side been now find any
new work part take get place made live where after back little only round man year came
show every good me give our under name very through just form sentence great think say help
low line differ turn cause much mean before move right boy old too same tell does set three
want air well also play small end put home read hand port large spell add even land here
must big high such follow act why ask men change went light kind off need house picture try
us again animal point mother world near build self earth father head stand own page should
country found answer school grow study still learn plant cover food sun four between state
keep eye never last let thought city tree cross farm hard start might story saw far sea draw
left late run don't while press close night real life few north open seem together next white
children begin got walk example ease paper group always music those both mark often letter
until mile river car feet care second book carry took science eat room friend began idea fish
mountain stop once base hear horse cut sure watch color face wood main enough plain girl
usual young ready above ever red list though feel talk bird soon body dog family direct pose
leave song measure door product black short numeral class wind question happen complete ship
area half rock order fire south problem piece told knew pass since top whole king space heard
best hour better true during hundred five remember step early hold west ground interest reach
fast verb sing listen six table travel less morning ten simple several vowel toward war lay
against pattern slow center love person money serve appear road map rain rule govern pull
cold notice voice unit power town fine certain fly fall lead cry dark machine note wait plan
figure star box noun field rest correct able pound done beauty drive stood contain front
teach week final gave green oh quick develop ocean warm free minute strong special mind
behind clear tail produce fact street inch multiply nothing course stay wheel full force blue
object decide surface deep moon island foot system busy test record boat common gold possible
plane stead dry wonder laugh thousand ago ran check game shape equate hot miss brought heat
snow tire bring yes distant fill east paint language among agent memory review request
result report budget server client cache retry error timeout deploy branch release"""
COMMON_WORDS = _COMMON_TEXT.split()

_RARE_TEXT = """accommodation acknowledgement bureaucratic cantankerous conscientious
deterioration entrepreneurial extraordinarily flabbergasted gobbledygook hemisphere
idiosyncratic juxtaposition kaleidoscope labyrinthine magnanimous nonchalantly onomatopoeia
perpendicular quintessential reconnaissance serendipitous thermodynamics unconscionable
vicissitudes whistleblower xenophobia yesteryear zealously paraphernalia circumlocution
disproportionate incomprehensible misappropriation photosynthesis questionnaire
rhododendron sesquipedalian tintinnabulation ubiquitously ventriloquist wherewithal
anthropomorphic bibliography chrysanthemum dichotomy ephemeral fastidious gregarious
haphazard impeccable"""
RARE_WORDS = _RARE_TEXT.split()

_PUNCTUATION = [".", ".", ".", ",", ",", ",", ";", ":", "?", "!", " -", "'s"]


def _word(rng: random.Random) -> str:
    """A word as often as English uses it: the first of the list most, rare ones seldom."""
    if rng.random() < 0.03:
        return rng.choice(RARE_WORDS)
    return COMMON_WORDS[int(len(COMMON_WORDS) * rng.random() ** 2.5)]  # a third from the top 20


def _sentence(rng: random.Random) -> str:
    words = [_word(rng) for _ in range(rng.randint(3, 22))]
    for index in range(1, len(words) - 1):
        if rng.random() < 0.08:
            words[index] += rng.choice(_PUNCTUATION[3:])
    words[0] = words[0].capitalize()
    if rng.random() < 0.1:
        words.insert(rng.randint(1, len(words)), rng.choice(["Alice", "London", "Go", "API"]))
    return " ".join(words) + rng.choice([*_PUNCTUATION[:3], "?", "!"])


def prose(rng: random.Random) -> str:
    """Paragraphs of English sentences built from the word list."""
    paragraphs = []
    for _ in range(rng.randint(1, 4)):
        paragraphs.append(" ".join(_sentence(rng) for _ in range(rng.randint(1, 6))))
    return "\n\n".join(paragraphs) + "\n" * rng.randint(0, 1)


def _identifier(rng: random.Random, style: str) -> str:
    parts = [rng.choice(COMMON_WORDS[40:]).replace("'", "") for _ in range(rng.randint(1, 3))]
    if style == "snake":
        return "_".join(parts)
    return parts[0] + "".join(part.capitalize() for part in parts[1:])


def _expression(rng: random.Random, style: str) -> str:
    name = _identifier(rng, style)
    shapes = [
        lambda: name,
        lambda: str(rng.randint(0, 5000)),
        lambda: f"{name}.{_identifier(rng, style)}({_identifier(rng, style)})",
        lambda: f"{name}[{rng.randint(0, 9)}]",
        lambda: f'"{_sentence(rng)[: rng.randint(3, 30)]}"',
        lambda: (
            f"{name} {rng.choice(['+', '-', '*', '/', '==', '!=', '<', '>='])} {rng.randint(1, 99)}"
        ),
        lambda: f"{name}({_identifier(rng, style)}, {rng.random():.3f})",
    ]
    return rng.choice(shapes)()


def _python(rng: random.Random) -> str:
    lines = [f"def {_identifier(rng, 'snake')}({_identifier(rng, 'snake')}, count=0):"]
    lines.append(f'    """{_sentence(rng)}"""')
    depth = 1
    for _ in range(rng.randint(2, 25)):
        pad = "    " * depth
        shape = rng.randrange(6)
        if shape == 0 and depth < 4:
            lines.append(f"{pad}if {_expression(rng, 'snake')}:")
            depth += 1
            lines.append(
                "    " * depth + f"{_identifier(rng, 'snake')} = {_expression(rng, 'snake')}"
            )
        elif shape == 1 and depth < 4:
            lines.append(f"{pad}for {_identifier(rng, 'snake')} in range({rng.randint(1, 100)}):")
            depth += 1
            lines.append("    " * depth + f"{_expression(rng, 'snake')}")
        elif shape == 2:
            lines.append(f"{pad}# {_sentence(rng)}")
        elif shape == 3 and depth > 1:
            depth -= 1
            lines.append("    " * depth + f"return {_expression(rng, 'snake')}")
        else:
            lines.append(f"{pad}{_identifier(rng, 'snake')} = {_expression(rng, 'snake')}")
    return "\n".join(lines) + "\n"


def _braces(rng: random.Random, go: bool) -> str:
    name = _identifier(rng, "camel")
    head = (
        f"func {name}(ctx context.Context, n int) error {{" if go else f"function {name}(a, b) {{"
    )
    lines = [f"// {_sentence(rng)}", head]
    depth = 1
    for _ in range(rng.randint(2, 25)):
        pad = "\t" * depth if go else "  " * depth
        shape = rng.randrange(5)
        if shape == 0 and depth < 4:
            cond = _expression(rng, "camel")
            lines.append(f"{pad}if {cond} {{" if go else f"{pad}if ({cond}) {{")
            depth += 1
        elif shape == 1 and depth > 1:
            depth -= 1
            lines.append(("\t" * depth if go else "  " * depth) + "}")
        elif shape == 2:
            keyword = ":=" if go else "="
            prefix = "" if go else "const "
            lines.append(
                f"{pad}{prefix}{_identifier(rng, 'camel')} {keyword} {_expression(rng, 'camel')}"
            )
        elif shape == 3:
            lines.append(f'{pad}return fmt.Errorf("{_sentence(rng)[:40]}: %w", err)')
        else:
            lines.append(
                f"{pad}{_expression(rng, 'camel')};"
                if not go
                else f"{pad}{_expression(rng, 'camel')}"
            )
    while depth:
        depth -= 1
        lines.append(("\t" * depth if go else "  " * depth) + "}")
    return "\n".join(lines) + "\n"


def code(rng: random.Random) -> str:
    """A function or two in Python's, Go's or JavaScript's shape."""
    makers: list[Callable[[random.Random], str]] = [
        _python,
        functools.partial(_braces, go=True),
        functools.partial(_braces, go=False),
    ]
    return "\n".join(rng.choice(makers)(rng) for _ in range(rng.randint(1, 2)))


def _json_value(rng: random.Random, depth: int) -> object:
    shape = rng.randrange(9 if depth < 3 else 6)
    if shape == 0:
        return rng.randint(-(10**6), 10**9)
    if shape == 1:
        return round(rng.uniform(-1000, 1000), rng.randint(0, 6))
    if shape == 2:
        return rng.choice([True, False, None])
    if shape in (3, 4, 5):
        return " ".join(_word(rng) for _ in range(rng.randint(1, 8)))
    if shape in (6, 7):
        return {
            _identifier(rng, rng.choice(["snake", "camel"])): _json_value(rng, depth + 1)
            for _ in range(rng.randint(1, 6))
        }
    return [_json_value(rng, depth + 1) for _ in range(rng.randint(0, 5))]


def json_document(rng: random.Random) -> str:
    """A JSON document, compact or indented, as an API or a tool prints it."""
    document = {_identifier(rng, "snake"): _json_value(rng, 1) for _ in range(rng.randint(1, 8))}
    indent = rng.choice([None, 2, 4])
    separators = (",", ":") if indent is None and rng.random() < 0.5 else None
    return json.dumps(document, indent=indent, separators=separators)


def numbers(rng: random.Random) -> str:
    """Numbers: runs of integers and decimals, a CSV or a markdown table of them."""

    def number() -> str:
        shape = rng.randrange(4)
        if shape == 0:
            return str(rng.randint(0, 10 ** rng.randint(1, 12)))
        if shape == 1:
            return f"{rng.uniform(-1e4, 1e4):.{rng.randint(1, 6)}f}"
        if shape == 2:
            return f"{rng.randint(0, 10**9):,}"
        return f"{rng.random():.2e}"

    rows, columns = rng.randint(1, 30), rng.randint(1, 8)
    style = rng.randrange(3)
    lines = []
    for _ in range(rows):
        cells = [number() for _ in range(columns)]
        lines.append([" ".join(cells), ",".join(cells), "| " + " | ".join(cells) + " |"][style])
    return "\n".join(lines) + "\n"


def hex_strings(rng: random.Random) -> str:
    """Hex digests and dumps, lower or upper case, one a line or run together."""
    digits = rng.choice([string.hexdigits[:16], string.digits + "ABCDEF"])
    size = rng.choice([8, 32, 40, 64, 2 ** rng.randint(0, 12)])
    items = ["".join(rng.choice(digits) for _ in range(size)) for _ in range(rng.randint(1, 20))]
    return rng.choice(["\n", " ", "", ", 0x"]).join(items)


def base64_text(rng: random.Random) -> str:
    """Base64 of random bytes, standard or URL-safe, wrapped at 76 or not."""
    raw = rng.randbytes(rng.randint(1, 3000))
    text = (base64.b64encode if rng.random() < 0.7 else base64.urlsafe_b64encode)(raw).decode()
    if rng.random() < 0.3:
        text = "\n".join(text[i : i + 76] for i in range(0, len(text), 76))
    return text


_CJK = "的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年得就那要下以生会自着去之过家学对可里后小么心多天而能好都然没日于起还发成事只作当想看文无开手十用主行方又如前所本见经头面公同三已老从动两长知民样现分将外但身些与高意进把法此实回二理美点月明其种声全工己话儿者向情部正名定女问力机给等几很业最间新什打便位因重被走电四第门相次东政海口使教西再平真听世气信北少关并内加化由却代军产入先山五太水万市眼体别处总才场师书比住员九笑性通目华报立马命张活难神数件安表原车白应路期叫死常提感金何更反合放做系计或司利受光王果亲界及今京务制解各任至清物台象记边共风战干接它许八特觉望直服毛林题建南度统色字请交爱让认算论百吃义科怎元社术结六功指思非流每青管夫连远资队跟带花快条院变联言权往展该领传近留红治决周保达办运武半候七必城父强步完革深区即求品士转量空甚众技轻程告江语英基派满式李息写呢识极令黄德收脸钱党倒未持取设始版双历越史商千片容研像找友孩站广改议形委早房音火际则首单据导影失拿网香似斯专石若兵弟谁校读志飞观争究包组造落视济喜离虽坐集编宝谈府拉黑且随格尽剑讲布杀微怕母调局根曾准团段终乐切级克精哪官示冷域"
_KANA = "あいうえおかきくけこさしすせそたちつてとなにぬねのはひふへほまみむめもやゆよらりるれろわをんアイウエオカキクケコサシスセソタチツテト"


def cjk(rng: random.Random) -> str:
    """Chinese and Japanese sentences: common characters mostly, rare ones and kana too."""

    def char() -> str:
        pick = rng.random()
        if pick < 0.7:
            return rng.choice(_CJK)
        if pick < 0.85:
            return rng.choice(_KANA)
        return chr(rng.randint(0x4E00, 0x9FFF))

    sentences = [
        "".join(char() for _ in range(rng.randint(2, 40)))
        + rng.choice("\u3002\uff0c\uff01\uff1f")  # the full stop, comma, ! and ? of CJK text
        for _ in range(rng.randint(1, 20))
    ]
    return rng.choice(["", "\n"]).join(sentences)


EMOJI = [
    "😀",
    "🎉",
    "👍",
    "🔥",
    "✅",
    "❌",
    "🚀",
    "👨‍👩‍👧‍👦",
    "👍🏽",
    "🇫🇷",
    "🏳️‍🌈",
    "❤️",
    "⭐",
    "🤖",
    "📦",
]


def emoji(rng: random.Random) -> str:
    """Runs of emoji, common and random, with joiners, skin tones and flags."""

    def one() -> str:
        if rng.random() < 0.6:
            return rng.choice(EMOJI)
        return chr(rng.randint(0x1F300, 0x1FAFF))

    runs = ["".join(one() for _ in range(rng.randint(1, 30))) for _ in range(rng.randint(1, 10))]
    return rng.choice(["", " ", "\n"]).join(runs)


def memory_log(rng: random.Random) -> str:
    """Entries as `axe run` appends them, their results of any of the other kinds."""
    results: list[Callable[[random.Random], str]] = [_sentence, prose, code, json_document, numbers]
    entries = []
    for _ in range(rng.randint(1, 8)):
        stamp = f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:00Z"
        result = rng.choice(results)(rng)
        entries.append(f"## {stamp}\n**Task:** {_sentence(rng)}\n**Result:** {result}\n\n")
    return "".join(entries)


def byte_soup(rng: random.Random) -> bytes:
    """Random bytes: invalid UTF-8, controls, anything; or random printable ASCII."""
    size = rng.randint(1, 3000)
    if rng.random() < 0.5:
        return rng.randbytes(size)
    return "".join(rng.choice(string.printable) for _ in range(size)).encode()


def keys(rng: random.Random) -> str:
    """Secrets and identifiers as tools print them: API keys, tokens, UUIDs, random names."""

    def one() -> str:
        alphabet = rng.choice([string.ascii_letters, string.ascii_letters + string.digits])
        body = "".join(rng.choice(alphabet) for _ in range(rng.randint(8, 64)))
        shape = rng.randrange(3)
        if shape == 0:
            return rng.choice(["sk-", "ghp_", "xoxb-", "AKIA", ""]) + body
        if shape == 1:
            return "-".join(rng.randbytes(n).hex() for n in (4, 2, 2, 2, 6))
        return body

    return rng.choice(["\n", " ", ", "]).join(one() for _ in range(rng.randint(1, 20)))


def mixture(rng: random.Random) -> bytes:
    """Pieces of every kind, one after another."""
    kinds = [maker for name, maker in KINDS.items() if name != "mixture"]
    return b"".join(text_bytes(rng.choice(kinds)(rng)) for _ in range(rng.randint(2, 6)))


def text_bytes(text: str | bytes) -> bytes:
    return text.encode() if isinstance(text, str) else text


KINDS: dict[str, Callable[[random.Random], str | bytes]] = {
    "prose": prose,
    "code": code,
    "json": json_document,
    "numbers": numbers,
    "hex": hex_strings,
    "base64": base64_text,
    "cjk": cjk,
    "emoji": emoji,
    "log": memory_log,
    "soup": byte_soup,
    "keys": keys,
    "mixture": mixture,
}
