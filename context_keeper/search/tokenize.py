"""Text → index terms, the same way for entries and queries.

Lowercase; punctuation stripped (``"storage?"`` → ``storag``); identifiers and paths split
(``getUserName``, ``snake_case``, ``kebab-case``, ``hooks/scope_guard.py``) while the whole
identifier is kept as one more, unstemmed term so an exact mention still scores higher; a dotted
number (``1.5.0``, ``v2.3``, ``0.5``) kept whole; parts stemmed with the Snowball English stemmer,
irregular verb forms read as their verb (``held`` → ``hold``; an acronym in capitals, ``HID``, is
no ``hide``, except in a text written all in capitals), comparatives and noun-made adjectives
as their word (``heaviest`` → ``heavy``, ``windy`` → ``wind``; adjectives.py) and some phrasal
verbs as the word of their act (``called off`` → ``cancel``); stop words dropped so they never
count as a match.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from context_keeper.search.adjectives import FORMS as ADJECTIVE_FORMS
from context_keeper.search.spelling import american

# A chunk is a run of word characters possibly joined by identifier/path punctuation. The
# lookbehind starts a leading-underscore chunk only where its run of underscores starts: tried at
# every underscore of a long run with no word after it, the match cost time quadratic in the run
# (16,000 underscores: 6 s), and a match starting inside a run can only repeat one from its start.
_CHUNK = re.compile(r"[^\W_]+(?:[_./\-:@+#]+[^\W_]+)*|(?<!_)_+[^\W_]+(?:[_./\-:@+#]+[^\W_]+)*", re.UNICODE)
_SEPARATORS = re.compile(r"[_./\-:@+#]+")
# ... and where a chunk splits into parts: not inside a dotted number. A version (1.5.0, v2.3,
# Python's 3.11, a host's 10.0.0.1) or a decimal (0.5) is one term that an entry stating it
# matches exactly: split, its digits were asked numbers that any "5" or "0" matched. Glued to
# letters ("M4.3", "2.5GB") it splits as before.
_PART_SEPARATORS = re.compile(r"(?:[_/\-:@+#]|\.(?!\d)|(?<!\d)\.)+")
_VERSION = re.compile(r"[vV]?(\d+(?:\.\d+)+)")
# camelCase / PascalCase / acronym boundaries: getUserName, HTTPServer, utf8Decode, v2Api; an
# acronym's plural is one word ("GPUs", "URLs"), not "GP" and "Us".
_CAMEL = re.compile(r"[A-Z]{2,}s(?![a-z])|[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+|[^\W\d_]+", re.UNICODE)
_PLURAL_ACRONYM = re.compile(r"[A-Z]{2,}s")
# Letters run into digits inside a camelCase piece ("S3" of "S3Bucket"), see _parts.
_LETTERS_DIGITS = re.compile(r"(?<![A-Za-z])[A-Za-z]+\d+(?!\d)")
# An apostrophe goes, and with it a possessive or a contraction's clitic: "they're" → "they",
# "isn't" → "isn" (both stop words), "I'd" → "I", not the terms "theyr" and "id".
_APOSTROPHE = re.compile(r"(?<=\w)['’](?:(?:s|re|ve|ll|d|m|t)\b)?", re.IGNORECASE)
# Phrasal verbs whose words say nothing alone: "hang on to the records" asks how long they are
# kept, and "hang" alone is a freeze. Read as the verb they mean.
_PHRASAL = re.compile(r"\b(?:hang|hangs|hanging|hung|hold|holds|holding|held) on ?to\b|\b(?:keep|keeps|keeping|kept) around\b",
                      re.IGNORECASE)
# More phrasal verbs, each read as the one word that names its act ("the shipper called off the
# load" is a cancellation, "the request timed out" a timeout, "log in" a login): the verb alone
# says something else, and the particle is a stop word. Also written hyphenated ("logged-in",
# "sign-up") and around a pronoun ("call it off"). Left out: "sign off" (to approve); "back up",
# as often a queue backing up as a backup; "turn/switch on/off", since an entry that "switched
# X off" stops mentioning the switch a how-to question asks about (answer_type.asked_action).
_PARTICLE_VERBS = {
    ("call", "off"): "cancel", ("turn", "up"): "show", ("set", "up"): "setup", ("shut", "down"): "shutdown",
    ("log", "in"): "login", ("log", "on"): "login", ("log", "out"): "logout", ("log", "off"): "logout",
    ("sign", "in"): "signin", ("sign", "out"): "signout", ("sign", "up"): "signup", ("roll", "over"): "rollover",
    ("roll", "back"): "rollback", ("roll", "out"): "rollout", ("pay", "out"): "payout", ("time", "out"): "timeout",
    ("clean", "up"): "cleanup", ("tear", "down"): "teardown", ("fall", "back"): "fallback", ("lock", "out"): "lockout",
    ("start", "up"): "startup", ("look", "up"): "lookup",
}
_PARTICLE_VERB_FORMS = {
    "call": "calls calling called", "turn": "turns turning turned", "set": "sets setting", "shut": "shuts shutting",
    "log": "logs logged logging", "sign": "signs signing signed", "roll": "rolls rolling rolled",
    "pay": "pays paying paid", "time": "times timing timed", "clean": "cleans cleaning cleaned",
    "tear": "tears tearing tore torn", "fall": "falls falling fell fallen", "lock": "locks locking locked",
    "start": "starts starting started", "look": "looks looking looked",
}
_PARTICLE_VERB_OF = {form: verb for verb, forms in _PARTICLE_VERB_FORMS.items() for form in [verb, *forms.split()]}
# Found from the particle back to its verb: an alternation of the verbs' forms tried at every
# letter cost six times the chunking.
_PARTICLE = re.compile(r"(?<=[A-Za-z])(-| it | them | )(up|on|off|in|out|down|over|back)\b", re.IGNORECASE)
_WORD_BEFORE = re.compile(r"(?<![A-Za-z])[A-Za-z]{3,9}$")
# Where the verb and particle mean something else: "turn up the log level" (or "turn it up")
# raises it; a log's "in" is often the place it is in ("the error log in production", "errors are
# logged in Sentry", "keep the logs in S3"), so, unhyphenated, "log in" is the act only before a
# word that goes with the act ("log in with Google", "logged in as admin") or at a clause's end.
_RAISE_OBJECT = re.compile(r" (?:the|a|an|its|their|our|your|this|that|it|them)\b", re.IGNORECASE)
_A_LOG = re.compile(r"(?<![A-Za-z])(?:a|an|the|this|that|our|their|its|no)[ -]+$", re.IGNORECASE)
_LOGGING_IN = re.compile(r" +(?:to|with|as|again|using|via|through|from|of|on|at|and|or|but|before|after|when|if|until"
                         r"|twice|automatically|successfully|users?)\b|\s*(?:[.,;:!?)]|$)", re.IGNORECASE)


def _particle_verbs(text: str) -> str:
    """``text`` with each phrasal verb of ``_PARTICLE_VERBS`` replaced by its word."""
    out: list[str] = []
    done = 0
    for match in _PARTICLE.finditer(text):
        start, end = match.start(), match.end()
        before = _WORD_BEFORE.search(text, max(done, start - 9), start)
        verb = before and _PARTICLE_VERB_OF.get(before.group().lower())
        word = verb and _PARTICLE_VERBS.get((verb, match.group(2).lower()))
        if not word:
            continue
        between = match.group(1)
        if (verb, word) == ("turn", "show") and (between.strip() or _RAISE_OBJECT.match(text, end)):
            continue
        if verb == "log" and between != "-" and (_A_LOG.search(text, max(0, before.start() - 8), before.start())
                                                  or not _LOGGING_IN.match(text, end)):
            continue
        out += (text[done:before.start()], word)
        done = end
    return "".join(out) + text[done:] if out else text


# Names made of a letter and symbols the chunking drops ("C++" was no term at all): spelled as
# people also write them.
_SYMBOL_NAMES = re.compile(r"(?<![\w+#])([cCfF])(\+\+|#)(?![\w+#])")
_BACKSLASH = re.compile(r"(?<=\w)\\(?=\w)")
# A .NET stack frame names its file at a line as "in C:\src\Sync\RetryQueue.cs:line 42": read as
# "RetryQueue.cs:42", as "line" of a Python frame is. Node's own frames ("node:internal/process/
# task_queues:95:5", "node:events:497") are the runtime's, in every Node trace: no word of them is
# the project's.
_DOTNET_LINE = re.compile(r"(\.[A-Za-z][A-Za-z0-9]{0,7}):line (\d+)")
_NODE_INTERNAL = re.compile(r"\bnode:[\w/.\-]+(?::\d+)*")
# A Python traceback's frame ('File "src/app.py", line 12, in ping') names a file at a line, as
# "src/app.py:12" does: "File" and "line", like its heading's "most recent call last", are the
# traceback's form, not words of the question.
_TRACEBACK = re.compile(r'\bFile "([^"\n]+)", line (\d+)|\bTraceback \(most recent call last\):')
# Chinese, Japanese and Korean are written without spaces: a sentence is one "word" to the
# chunking, and a word inside it could never match. Runs of their characters are indexed as
# overlapping character pairs (日本語 → 日本, 本語), as CJK analysers do without a dictionary.
_CJK = re.compile(r"([\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]+)")


# A file's position as compilers, linters and test runners print it ("mbtiles.rs:142:9"), as a
# code host's link anchors it ("api.py#L12", "#L12-L20") or as pytest names a test in it
# ("test_api.py::test_ping", group 3): glued on, they made the file name a word no entry spells.
_AT_LINE = re.compile(r"(.*\.([A-Za-z][A-Za-z0-9]{0,7}))(?:(?::\d+){1,2}|#L\d+(?:-L?\d+)?|((?:::\w+)+))")
# Only a path or a source file's name: "example.com:443" keeps its port.
_SOURCE_SUFFIXES = frozenset(
    "py pyi rs go js mjs cjs ts tsx jsx java kt kts scala c h cc cpp cxx hpp hh cs fs rb php swift m mm dart "
    "lua pl ex exs erl hs ml sql sh bash zsh ps1 yaml yml json toml ini cfg xml html css scss vue svelte "
    "tf proto gradle md rst txt".split())
# Values pasted from logs that name one event, not a topic: a timestamp with its time, a UUID or
# a long hex id, a memory address. Kept whole as one exact-match term (an entry that records the
# id still matches it), not as fragments ("05", "12t08") that match unrelated dates and numbers.
_OPAQUE = re.compile(
    r"\d{4}-\d{2}-\d{2}[tT ]\d{2}:\d{2}(?::\d{2})?(?:[.,]\d+)?(?:[zZ]|[+-]\d{2}:?\d{2})?"
    r"|[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
    r"|0[xX][0-9a-fA-F]+"
    r"|(?=[0-9a-fA-F]*[a-fA-F])(?=[0-9a-fA-F]*\d)[0-9a-fA-F]{16,}"
)
# Inflections the stemmer gives another stem than their word's: "panicked" → "panick" beside
# "panic"; Latin plurals ("indices" → "indic" beside "index").
_IRREGULAR = {
    "panicked": "panic", "panicking": "panic", "panicky": "panic", "mimicked": "mimic", "mimicking": "mimic",
    "trafficked": "traffic", "trafficking": "traffic", "indices": "index", "vertices": "vertex",
    "matrices": "matrix", "appendices": "appendix", "criteria": "criterion", "analyses": "analysis",
}
# Irregular verbs: a past form or participle → its verb ("the job was held" meets "hold the job").
# Left out, a form that is as often a word of its own: left (the side), found (founded), saw,
# felt, led (LED), bound (a limit), wound, ground, shot (a vaccine), bit (a bit), rose, spoke
# (hub and spoke), stuck (in the freeze group), lay, went/gone/done (the language Go, "done"
# a state), mistaken (wrong), driven (data-driven); "won", "got", "knew" are stop words. Kept:
# "fell" and "sat", rarely a hill's or Saturday's name in a question, and then read the same way
# in the entry that has it.
_VERB_FORMS = """
arise arose arisen|awake awoke awoken|become became|begin began begun|bend bent|bite bitten
bleed bled|blow blew blown|break broke broken|breed bred|bring brought|build built|burn burnt
buy bought|catch caught|choose chose chosen|come came|creep crept|deal dealt|dig dug
draw drew drawn|eat ate eaten|fall fell fallen|feed fed|fight fought|flee fled|fly flew flown
forbid forbade forbidden|forget forgot forgotten|forgive forgave forgiven|freeze froze frozen
give gave given|grow grew grown|hang hung|hear heard|hide hid hidden|hold held|keep kept
lay laid|leap leapt|learn learnt|lend lent|lose lost|make made|mean meant|meet met
overcome overcame|overpay overpaid|overrun overran|overtake overtook overtaken
overwrite overwrote overwritten|pay paid|prepay prepaid|rebuild rebuilt|repay repaid|rerun reran
rewrite rewrote rewritten|ride rode ridden|ring rang|rise risen|run ran|see seen|seek sought
sell sold|send sent|shake shook shaken|shrink shrank shrunk|sing sang sung|sink sank sunk
sit sat|sleep slept|slide slid|speak spoken|speed sped|spend spent|spill spilt|spin spun
spring sprang sprung|stand stood|steal stole stolen|strike struck|swear swore sworn|sweep swept
swim swam swum|swing swung|take took taken|teach taught|tear tore torn|think thought
throw threw thrown|undertake undertook undertaken|understand understood|undo undid undone
uphold upheld|wake woke woken|wear wore worn|weave wove woven|withdraw withdrew withdrawn
withhold withheld|withstand withstood|write wrote written
"""
_VERB_OF = {form: verb for verb, *forms in (g.split() for g in re.split(r"[|\n]", _VERB_FORMS) if g) for form in forms}
_IRREGULAR.update(_VERB_OF)
_IRREGULAR.update(ADJECTIVE_FORMS)  # "heaviest" → "heavy", "windy" → "wind"
# Names the stemmer reads as plurals: "iOS" stemmed to "io", the IO of "disk IO".
_NAMES = frozenset({"ios", "ipados", "tvos", "watchos", "bios"})


def _spelled(match: re.Match[str]) -> str:
    letter = match.group(1).lower()
    return "cpp" if match.group(2) == "++" else ("csharp" if letter == "c" else "fsharp")


def _frame(match: re.Match[str]) -> str:
    return f"{match.group(1)}:{match.group(2)}" if match.group(1) else ""


STOP_WORDS = frozenset(
    """
    a about above after again against all also am an and any are aren as at be because been
    being below between both but by can cannot could couldn did didn do does doesn doing don
    dont down during each either else ever few for from further get gets getting got had hadn
    has hasn have haven having he her here hers herself him himself his how i if in into is
    isn it its itself just let lets me might more most must mustn my myself no nor not now of
    off on once one only or other ought our ours ourselves out over own per same shall shan
    she should shouldn so some such than that the their theirs them themselves then there
    these they this those through thus to too under until up upon us very was wasn way we
    were weren what whatever when where whether which while who whom whose why will with
    within without won would wouldn yes yet you your yours yourself yourselves
    ain anyone anything everything something someone somebody thing things stuff really actually
    going gonna want wanted wants need needs needed know knew known tell told say said
    """.split()
)

_stemmer = None


def _english_stemmer():
    """The Snowball English stemmer, exactly as ``snowballstemmer.stemmer("english")`` picks
    it (PyStemmer when installed, else the pure-Python one)."""
    try:
        import Stemmer  # type: ignore[import-not-found]
    except ImportError:
        return _snowball_english()()
    return Stemmer.Stemmer("english")


def _snowball_english():  # -> type[snowballstemmer.english_stemmer.EnglishStemmer]
    """``EnglishStemmer`` without running ``snowballstemmer/__init__``, which imports all 30
    languages (~50 ms per process, most of it Hindi's tables): the package is stood in for by
    a bare module while its English submodule loads, then removed, so a later ``import
    snowballstemmer`` runs the real package (reusing the loaded submodules)."""
    import os
    import sys

    if "snowballstemmer" not in sys.modules:
        for base in sys.path:
            folder = os.path.join(base or os.curdir, "snowballstemmer")
            if os.path.isfile(os.path.join(folder, "english_stemmer.py")):
                stand_in = type(sys)("snowballstemmer")
                stand_in.__path__ = [folder]
                sys.modules["snowballstemmer"] = stand_in
                try:
                    from snowballstemmer.english_stemmer import EnglishStemmer
                finally:
                    if sys.modules.get("snowballstemmer") is stand_in:
                        del sys.modules["snowballstemmer"]
                return EnglishStemmer
    from snowballstemmer.english_stemmer import EnglishStemmer

    return EnglishStemmer


def _seed() -> dict[str, str]:
    # Stems of the built-in word lists (generic.py, synonyms.py), precomputed: stemming them at
    # import cost every process ~30 ms. tests/test_search_state.py pins them to the stemmer.
    from context_keeper.search.stem_table import STEMS

    return dict(STEMS)


_stem_cache: dict[str, str] = _seed()


def stem(word: str, acronym: bool = False) -> str:
    """Snowball stem of a lowercase word, cached (the vocabulary of a store is small). An
    ``acronym`` (the word was written in capitals) is no verb form: "HID", "RAN" and "SAT" are
    not "hide", "run" and "sit"."""
    if acronym and word in _VERB_OF:
        return live_stem(word, irregular=False)
    cached = _stem_cache.get(word)
    if cached is None:
        cached = live_stem(word)
        if len(_stem_cache) < 200_000:
            _stem_cache[word] = cached
    return cached


def live_stem(word: str, irregular: bool = True) -> str:
    """``stem`` computed, not looked up; ``irregular`` reads an irregular form as its word."""
    global _stemmer
    if word.isdigit() or len(word) <= 2 or word in _NAMES:
        return word
    if _stemmer is None:
        _stemmer = _english_stemmer()
    return _stemmer.stemWord(american(_IRREGULAR.get(word, word) if irregular else word))


_TWO_LETTER_STOPS = frozenset(word for word in STOP_WORDS if len(word) == 2)


def _camel_words(piece: str) -> list[str]:
    """The words of a mixed-case piece. Neighbouring words of one or two letters are one word:
    they are a unit or a name written in mixed case ("kWh", "GiB", "MHz", "iOS", "PyPI"), and
    "wh" or "gi" alone is an asked word no entry has. A two-letter stop word is not joined: in
    an identifier it is a word ("findByID", "sizeInMB", "myDB", "toUI"), and the "ID", "MB"
    after it is the word asked for. Nor is a capitalised word after two lower-case letters
    ("dbId", "jsDb"): that is how an identifier joins two words, where a unit or a name puts one
    letter first ("kWh", "pH", "eBay") or ends in capitals ("tvOS"). An acronym's plural is the
    acronym ("GPUs" → "GPU"), as a word's plural stems to the word."""
    words: list[str] = []
    run: list[str] = []
    for sub in _CAMEL.findall(piece):
        if len(sub) <= 2 and not sub.isdigit() and sub.lower() not in _TWO_LETTER_STOPS:
            if len(run) == 1 and len(run[0]) == 2 and run[0].islower() and len(sub) == 2 and sub.istitle():
                words.append(run.pop())
            run.append(sub)
            continue
        if run:
            words.append("".join(run))
            run = []
        words.append(sub[:-1] if _PLURAL_ACRONYM.fullmatch(sub) else sub)
    if run:
        words.append("".join(run))
    return words


def _pieces(chunk: str) -> Iterator[str]:
    """``chunk`` split at its separators, a dotted number (``_VERSION``) kept whole."""
    for piece in _PART_SEPARATORS.split(chunk):
        if "." in piece and not _VERSION.fullmatch(piece):
            yield from piece.split(".")
        else:
            yield piece


def _parts(chunk: str) -> Iterator[str]:
    """Atomic words of an identifier/path chunk, as written (the case says what an acronym is)."""
    for piece in _pieces(chunk):
        if not piece:
            continue
        version = _VERSION.fullmatch(piece)
        if version:  # "v2.3" is the "2.3" an entry may write without its "v"
            yield version.group(1)
            continue
        if not piece.isascii() or piece.islower() or piece.isupper() or piece.isdigit():
            yield piece
        else:
            subs = _camel_words(piece)
            yield from subs
            # What the camelCase split tears apart but people write on its own: a lone capital
            # before a word ("OAuth2Token" → "oauth", "XCode" → "xcode") and letters run into
            # digits ("S3Bucket" → "s3", "x509Cert" → "x509", "IPv6Addr" → "ipv6").
            whole = piece.lower()
            glued = _LETTERS_DIGITS.findall(piece)
            if len(subs) > 1 and len(subs[0]) == 1 and subs[0].isupper() and subs[1][:1].isupper() and subs[1][1:2].islower():
                glued.insert(0, subs[0] + subs[1])
            # ... and inside the identifier, a one-letter part before digits: "getS3Bucket" → "s3".
            glued += [a + b for a, b in zip(subs[1:], subs[2:]) if len(a) == 1 and a.isalpha() and b.isdigit()]
            for word in glued:
                if word.lower() != whole:  # the whole piece is a term already
                    yield word.lower()


def nfc(text: str) -> str:
    """``text`` in composed form: "café" typed on macOS often arrives as "cafe" + U+0301, which
    would otherwise be another word than the "café" an entry spells."""
    if text.isascii():
        return text
    import unicodedata

    return text if unicodedata.is_normalized("NFC", text) else unicodedata.normalize("NFC", text)


def _prepared(text: str) -> str:
    """``text`` as the chunking reads it (apostrophes, phrasal verbs, C++/C#, traceback frames,
    backslashes)."""
    text = nfc(text)
    if "'" in text or "’" in text:  # a scan for them costs a tenth of the pattern's
        text = _APOSTROPHE.sub("", text)
    folded = text.lower()  # the pattern ignores case, so its cheap pre-check must too ("Hang On To")
    if " on" in folded or " around" in folded:
        text = _PHRASAL.sub("keep", text)
    text = _particle_verbs(text)
    if "+" in text or "#" in text:
        text = _SYMBOL_NAMES.sub(_spelled, text)
    if 'File "' in text or "Traceback (" in text:
        text = _TRACEBACK.sub(_frame, text)
    if "\\" in text:
        text = _BACKSLASH.sub("/", text)  # a Windows path is a path: src\app\main.py as src/app/main.py
    if ":line " in text:
        text = _DOTNET_LINE.sub(r"\1:\2", text)
    if "node:" in text:
        text = _NODE_INTERNAL.sub("", text)
    return text


_CAPITALS_WORD = re.compile(r"(?<![A-Za-z])[A-Z]{2,}(?![A-Za-z])")
_CAPITALS = bytes(range(ord("A"), ord("Z") + 1))
_LOWER_CASE = bytes(range(ord("a"), ord("z") + 1))


def _in_capitals(text: str) -> bool:
    """Whether ``text`` is written in capitals (caps lock on, a shouted log line): three capitals
    or more to each lower-case letter (an id or path may be in lower case) and ordinary words in
    capitals, "THE" or "OF", of three letters at least, as no list of acronyms has ("IT", "US"
    alone are acronyms too)."""
    # Letters counted by deleting them from bytes: a pattern scanning every text cost a tenth of
    # the tokenizing.
    letters = text.encode("ascii", "ignore")
    capitals = len(letters) - len(letters.translate(None, _CAPITALS))
    if capitals < 3 or capitals < 3 * (len(letters) - len(letters.translate(None, _LOWER_CASE))):
        return False
    return sum(len(word) for word in _CAPITALS_WORD.findall(text) if word.lower() in STOP_WORDS) >= 3


def iter_tagged(text: str) -> Iterator[tuple[str, bool]]:
    """``(term, is_compound)`` pairs of ``text`` in order, with repeats. Compound terms are
    whole identifiers/paths kept beside their parts: an exact mention is a bonus, and a
    query's compound that no entry spells the same way must not count as unmatched."""
    if not text:
        return
    text = _prepared(text)
    # In a text written in capitals a word in capitals is no acronym: "RAN" of "THE BUILD RAN OUT
    # OF MEMORY" is the verb's form (see stem).
    capitals = _in_capitals(text)
    cache = _chunk_cache
    for chunk in _CHUNK.findall(text):
        if capitals and chunk.isupper():
            chunk = chunk.lower()
        out = cache.get(chunk)
        if out is None:
            out = _chunk_terms(chunk)
            if len(cache) < 200_000:
                cache[chunk] = out
        yield from out


_chunk_cache: dict[str, tuple[tuple[str, bool], ...]] = {}


def _chunk_terms(chunk: str) -> tuple[tuple[str, bool], ...]:
    chunk = chunk.strip("_")
    if not chunk:
        return ()
    if _OPAQUE.fullmatch(chunk):
        return ((chunk.lower(), True),)
    at_line = _AT_LINE.fullmatch(chunk)
    if at_line and ("/" in at_line.group(1) or at_line.group(2).lower() in _SOURCE_SUFFIXES):
        test = at_line.group(3)  # the test's own name is the query's words, as a sentence's are
        return _chunk_terms(at_line.group(1)) + (_chunk_terms(test.strip(":")) if test else ())
    if not chunk.isascii() and _CJK.search(chunk):
        return _cjk_terms(chunk)
    out: list[tuple[str, bool]] = []
    parts = [p for p in _parts(chunk) if p]
    if len(parts) > 1:
        whole = chunk.lower()
        # A camelCase word is stemmed whole, as the same word typed in lower case is:
        # "PagerDuty" and "pagerduty", "iOS" and "ios" must meet. Identifiers with separators
        # (snake_case, paths) stay verbatim.
        out.append((whole if _SEPARATORS.search(whole) else stem(whole), True))
        # Each path segment as a whole too ("scope_guard.py" → "scope_guard"): an agent
        # naming the module without its directory should still match exactly.
        if "/" in whole:
            for seg in whole.split("/"):
                if seg and seg != whole and not seg.isdigit():
                    out.append((seg, True))
                    base = seg.rsplit(".", 1)[0]
                    if base and base != seg and _SEPARATORS.search(base):
                        out.append((base, True))
    for written in parts:
        part = written.lower()
        if part in STOP_WORDS or (len(part) == 1 and not part.isdigit()):
            continue
        out.append((stem(part, acronym=written.isupper()), False))
    return tuple(out)


def _cjk_terms(chunk: str) -> tuple[tuple[str, bool], ...]:
    out: list[tuple[str, bool]] = []
    for i, piece in enumerate(_CJK.split(chunk)):
        if i % 2:  # a run of CJK characters
            out += [(piece, False)] if len(piece) == 1 else [(piece[j:j + 2], False) for j in range(len(piece) - 1)]
        elif piece:  # what is between them ("DB" in "東京DB") is chunked as usual
            for sub in _CHUNK.findall(piece):
                out += _chunk_terms(sub)
    return tuple(out)


def _file_path(chunk: str) -> tuple[str, str, str] | None:
    """``(directories, name, suffix)`` of a chunk that is a path to a source file
    ("src/packwise/sync/retry_queue.py", "app/models/user.rb:42"), else None. A slash alone
    does not make a path ("blue/green", "mg/kg", "bold/italic/underline"): the last part must
    end in a source file's suffix."""
    chunk = chunk.strip("_")
    at_line = _AT_LINE.fullmatch(chunk)
    if at_line:
        chunk = at_line.group(1)
    directories, _, leaf = chunk.rpartition("/")
    name, dot, suffix = leaf.rpartition(".")
    if not directories or not dot or not name or suffix.lower() not in _SOURCE_SUFFIXES:
        return None
    return directories, name, suffix


def _paths_in(text: str) -> Iterator[tuple[str, tuple[str, str, str] | None]]:
    """Each chunk of ``text`` with the path it is: ``_file_path``'s for a source file,
    ``(directory, "", "")`` for a directory written with its trailing slash ("src/payments/":
    two parts or more, so "and/or/" is a stretch nobody writes), else None."""
    prepared = _prepared(text)
    for match in _CHUNK.finditer(prepared):
        yield match.group(), _chunk_path(prepared, match)


def _chunk_path(prepared: str, match: re.Match[str]) -> tuple[str, str, str] | None:
    """The path a chunk of ``_prepared`` text is, as ``_paths_in`` gives it."""
    chunk = match.group()
    path = _file_path(chunk)
    if path is None and prepared.startswith("/", match.end()) and "/" in chunk.strip("_"):
        path = (chunk.strip("_"), "", "")
    return path


def file_paths(text: str) -> tuple[str, ...]:
    """The source file and directory paths ``text`` names, as written ("app/models/user.rb" of
    "./app/models/user.rb:42", "src/payments/" of "what about src/payments/?"), in order."""
    if not text or "/" not in text and "\\" not in text:
        return ()
    out = [f"{d}/{name}.{suffix}" if name else f"{d}/" for _, (d, name, suffix) in _known_paths(text)]
    return tuple(dict.fromkeys(out))


def _known_paths(text: str) -> Iterator[tuple[str, tuple[str, str, str]]]:
    return ((chunk, path) for chunk, path in _paths_in(text) if path is not None)


# A JVM class named with its package ("com.acme.sync.RetryQueue", "java.lang.IllegalStateException",
# in a module "java.base/java.lang.Thread"): lower-case parts, then a capitalised one.
_JVM_NAME = re.compile(r"(?:[\w.]+/)?((?:[a-z][a-z0-9_]*\.){2,})([A-Z][\w.]*)")
# Python writes a class the same way ("pydantic.fields.FieldInfo", "celery.beat.PersistentScheduler"),
# and there the library's name is what the question is about. So such a name is a package path
# only in a frame ("at com.acme.Queue.drain(") or under a root that only JVM packages start with.
_JVM_ROOTS = ("com.", "org.", "net.", "io.", "dev.", "java.", "javax.", "jdk.", "kotlin.", "kotlinx.", "android.")


def _package_path(prepared: str, match: re.Match[str]) -> tuple[str, str] | None:
    """``(package, name)`` of a chunk that is a class or function named with its package or
    namespace, else None: a JVM name in a frame or under a JVM root (``_JVM_ROOTS``: "com.acme.sync"
    and "RetryQueue.drain", not "pydantic.fields" of "pydantic.fields.FieldInfo"); a frame of a .NET
    or JVM stack trace, "at NS.Sub.Class.Method(" (namespaces are capitalised in .NET: the last
    two parts are the class and the method); a Go frame, "github.com/acme/shop/sync.(*Queue).Drain(",
    "main.(*Queue).Drain(" or ".../sync.Drain(" (the import path is the package)."""
    chunk = match.group().strip("_")
    after = prepared[match.end(): match.end() + 2]
    in_frame = prepared.endswith("at ", 0, match.start())
    jvm = _JVM_NAME.fullmatch(chunk)
    if jvm and (in_frame or chunk.rpartition("/")[2].startswith(_JVM_ROOTS)):
        return chunk[: jvm.start(2) - 1], jvm.group(2)
    if after.startswith("(") and "." in chunk and "/" not in chunk and in_frame:
        parts = chunk.split(".")
        return (".".join(parts[:-2]), ".".join(parts[-2:])) if len(parts) > 2 else None
    if after == ".(" or "/" in chunk and after.startswith("(") and "." in chunk.rpartition("/")[2]:
        directory, slash, leaf = chunk.rpartition("/")
        package, _, name = leaf.partition(".")
        return directory + slash + package, name
    return None


def _locations_in(text: str) -> Iterator[tuple[str, str, str]]:
    """``(chunk, where, name)`` for each chunk of ``text``: ``where`` is what of it only says
    where the thing it names is (a file path's directories and suffix, a directory path, a
    package or namespace, the suffix of a file named at a line), ``name`` the part that names the
    thing; ``where`` is empty for a chunk that is no location."""
    prepared = _prepared(text)
    for match in _CHUNK.finditer(prepared):
        chunk = match.group()
        path = _chunk_path(prepared, match)
        if path is not None:
            directories, name, suffix = path
            yield chunk, f"{directories}/.{suffix}" if suffix else directories, name
            continue
        package = _package_path(prepared, match)
        if package is not None:
            yield chunk, package[0], package[1]
            continue
        at_line = _AT_LINE.fullmatch(chunk.strip("_"))
        if at_line and not at_line.group(3) and at_line.group(2).lower() in _SOURCE_SUFFIXES:
            # "(RetryQueue.kt:42)" of a JVM frame: a file at a line, its suffix the language's
            yield chunk, "." + at_line.group(2), at_line.group(1)[: -len(at_line.group(2)) - 1]
            continue
        yield chunk, "", ""


def path_context(text: str) -> frozenset[str]:
    """Terms of ``text`` that it has only as a file path's directories or suffix ("src",
    "packwis", "packwise", "sync" and "py" of "src/packwise/sync/retry_queue.py"), or as a
    directory path's parts ("src/packwise/sync/"), a package's or namespace's ("com", "acm",
    "sync" of "com.acme.sync.RetryQueue", of a .NET frame "at Acme.Sync.RetryQueue.Drain()" or of
    a Go frame "github.com/acme/sync.(*Queue).Drain"), the suffix of a file named at a line
    ("kt" of "RetryQueue.kt:42"), and nowhere else (not in the file's, class's or function's
    name, not as a word of the sentence around it).

    They locate the file; they do not say what it is about. The project or package name, "src",
    "app", "com" or "tests" are in every path a store records, so an entry sharing them with a
    pasted path or stack frame is no answer about that file (the engine lets them order entries,
    not make them relevant). The whole path, the file name ("retry_queue.py"), the class and the
    method ("RetryQueue.drain") and their words stay the query's own."""
    if not text or not any(c in text for c in "/\\.:"):
        return frozenset()
    context: set[str] = set()
    own: set[str] = set()
    for chunk, where, name in _locations_in(text):
        terms_of = [term for term, _ in _chunk_terms(chunk)]
        if not where:
            own.update(terms_of)
            continue
        directories, _, suffix = where.partition("/.") if "/." in where else (where, "", "")
        if where.startswith("."):
            directories, suffix = "", where[1:]
        located = {term for term, _ in _chunk_terms(directories)} if directories else set()
        located.update(segment.lower() for segment in directories.split("/") if segment)  # the path's compounds
        if suffix:
            located.update((suffix.lower(), stem(suffix.lower())))
        mine = {term for term, _ in _chunk_terms(name)}
        context.update(located - mine)
        own.update(term for term in terms_of if term not in located or term in mine)
    return frozenset(context - own)


def iter_terms(text: str) -> Iterator[str]:
    """Index terms of ``text`` in order, with repeats (term frequency matters)."""
    for term, _ in iter_tagged(text):
        yield term


def terms(text: str) -> list[str]:
    return list(iter_terms(text))
