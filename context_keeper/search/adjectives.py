"""Adjective forms the stemmer gives another stem than their word's.

Snowball leaves comparatives and superlatives as they are ("heaviest" → "heaviest", never
"heavi" of "heavy"; "longest", "hottest") and an adjective made of a noun with "-y" apart from
the noun ("windy" → "windi" beside "wind"). Questions ask from the symptom side in exactly these
forms ("how windy is too windy to fly?", "what's the heaviest parcel we take?") of entries that
state the plain word ("wind up to 12 m/s", "heavy parcels"). ``FORMS`` reads each such form as
the word whose stem it gets; entries and questions go through the same tokenizer, so an entry's
"windiest" meets a question's "wind" too.

Tables of common words, not a suffix rule: "-er" and "-est" end far more nouns and verbs
(server, order, water, buffer, never; test, request, interest, digest, suggest) than
comparatives, and "-y" ends words that come from no noun (every, city, query, policy, ready,
early, busy, heavy). Left out where the form or the word more often means something else:
"later"/"latest" (afterwards, the newest; not delayed), "longer" (mostly "no longer"),
"newer"/"newest"/"older"/"oldest" (a version compared with another, where "new" and "old" say
"another" and "the previous": read as those everyday words, "a newer version" lost what made it
specific, and on the eval's dev split a question asking for one ranked its answer lower),
"lighter", "cleaner", "stranger" (nouns of their own), and the words "cool", "dim" and "fit"
(a cooler, a dimmer, a fitter), "close" (to shut), "fine" (a penalty), "kind" (a sort), "mean"
(an average); "rusty" (Rust), "salty" (a password's salt), "patchy" (a software patch), "bumpy"
(a version bump), "sunny" (Sun of Mon–Sun), "smoky" (a smoke test), "chatty" (a chat), "bulky"
(bulk operations), "hacky" (a workaround, where a "hack" is a breach), "lumpy" (to lump
together), "blocky", "edgy", "sticky", "drafty", "minty", "soapy", "musty" and "scaly", whose
nouns are other words in a project's records. "more"/"most" are stop words;
"better"/"best" and "worse"/"worst" are kept as they are: "best practice" and "best-effort" are
not "good".
"""

from __future__ import annotations

# Gradable adjectives taking the regular endings: "-er"/"-est", "-r"/"-st" after "e"
# (large → larger), "-ier"/"-iest" for a consonant and "y" (heavy → heavier).
_REGULAR = """
bold brave brief bright broad brown busy calm cheap clean clear clever cold crazy crisp cute
dark deep dense dirty dry dull early easy empty faint fair fast fierce firm fresh friendly full
funny gentle great green grey gray happy hard harsh heavy high humble keen large lazy light
likely lively lonely long loose loud lovely low mild narrow near neat nice noble plain poor pretty
proud pure quick quiet rare rich rough rude safe shallow sharp shiny short silly simple slow
small smart smooth soft soon sparse steady steep stiff strange strict strong sturdy subtle sweet
tall thick tidy tight tiny tough tricky true ugly vague warm weak weird white wide wild wise
young
"""
# ... and those that double their last consonant first (big → bigger, hot → hottest).
_DOUBLING = "big fat flat glad grim hot mad red sad slim thin wet"
# Forms that more often mean something else than their adjective (see above).
_OWN_WORDS = frozenset({"lighter", "cleaner", "stranger", "longer", "newer", "newest", "older", "oldest"})

# Adjectives made of a noun with "-y", read as the noun: the plain noun + "y" (rain → rainy),
# its "e" dropped (ice → icy, noise → noisy) ...
_NOUNS = """
ache bone breeze burst cheese cloud crash cream crunch dust flake foam frost froth fruit
glitch grain grass grease gust hair haze health hill ice itch jitter juice leaf leak
length luck malt meat milk mist mood moss noise oil pepper rain risk rock sand shadow
shower sleep sleet slush smell sneeze snow speed spice spike stink stone storm sugar sweat
taste thorn thunder water wealth weed wheeze wind wood word yeast
"""
# ... its last consonant doubled (fog → foggy, bug → buggy) ...
_DOUBLING_NOUNS = "blur bug fog fur lag mud nut spam"
# ... or another spelling.
_NOUN_OF = {
    "angry": "anger", "hungry": "hunger", "thirsty": "thirst", "wintry": "winter", "pricey": "price", "pricy": "price",
    "lossy": "loss", "costly": "cost", "mouldy": "mould", "moldy": "mold", "lemony": "lemon", "buttery": "butter",
}


def _comparatives(word: str, double: bool = False) -> tuple[str, str]:
    if double:
        return word + word[-1] + "er", word + word[-1] + "est"
    if word.endswith("e"):
        return word + "r", word + "st"
    if word.endswith("y") and word[-2:-1] not in "aeiou":
        return word[:-1] + "ier", word[:-1] + "iest"
    return word + "er", word + "est"


def _y_adjective(noun: str, double: bool = False) -> str:
    if double:
        return noun + noun[-1] + "y"
    return noun.removesuffix("e") + "y"


def _forms() -> dict[str, str]:
    out: dict[str, str] = {}
    for word in _REGULAR.split():
        out.update(dict.fromkeys(_comparatives(word), word))
    for word in _DOUBLING.split():
        out.update(dict.fromkeys(_comparatives(word, double=True), word))
    adjectives = {_y_adjective(noun): noun for noun in _NOUNS.split()}
    adjectives.update({_y_adjective(noun, double=True): noun for noun in _DOUBLING_NOUNS.split()})
    adjectives.update(_NOUN_OF)
    for adjective, noun in adjectives.items():
        out[adjective] = noun
        if not adjective.endswith("ey"):  # "windier", "buggiest": the noun too ("pricier" is pricy's)
            out.update(dict.fromkeys(_comparatives(adjective), noun))
    for word in _OWN_WORDS:
        out.pop(word, None)
    return out


FORMS: dict[str, str] = _forms()
