"""Shared texts for the locator tests: deterministic prose and a three-document corpus.

A passage that occurs exactly once (``UNIQUE``), one that occurs three times (``DUP``), and
documents around them; the offsets are named so that tests can state exact spans.
"""

from __future__ import annotations

import random

from spanchor_core.locate import Location

_WORDS = [
    "river",
    "stone",
    "quiet",
    "lamp",
    "orchard",
    "velvet",
    "signal",
    "harbor",
    "meadow",
    "copper",
    "lantern",
    "thistle",
    "granite",
    "willow",
    "ember",
    "falcon",
    "cobalt",
    "prairie",
    "summit",
    "beacon",
    "marble",
    "tundra",
    "juniper",
    "canyon",
    "saffron",
    "glacier",
    "hollow",
    "mosaic",
    "pepper",
    "quartz",
    "ribbon",
    "tide",
    "ember",
    "violet",
    "walnut",
    "zephyr",
]


def prose(seed: int, words: int) -> str:
    """Deterministic sentences; distinct seeds give texts that share no long passage."""
    rng = random.Random(seed)
    out: list[str] = []
    for n in range(words):
        word = rng.choice(_WORDS) + str(rng.randrange(1000))
        out.append(word.capitalize() if n % 9 == 0 else word)
        if n % 9 == 8:
            out[-1] += "."
    text = " ".join(out)
    return text if text.endswith(".") else text + "."


# A passage that occurs exactly once, one that occurs three times, and documents around them.
UNIQUE = prose(1, 30)
DUP = prose(2, 25)
HEAD_A = prose(3, 40) + "\n\n"
HEAD_B = prose(4, 40) + " "
MID_B = " " + prose(5, 30) + " "
DOC_A = HEAD_A + UNIQUE + "\n\n" + prose(6, 20) + " " + DUP + " " + prose(7, 20)
DOC_B = HEAD_B + DUP + MID_B + DUP + "\n\n" + prose(8, 40)
DOC_C = "# Heading one\n\nSome **bold claims** and " + prose(9, 60) + "\n\n" + prose(10, 30) + "."
UNIQUE_AT = len(HEAD_A)
DUP_A = DOC_A.index(DUP)
DUP_B1 = len(HEAD_B)
DUP_B2 = len(HEAD_B) + len(DUP) + len(MID_B)


def near(loc: Location, document_id: str, start: int, end: int, slack: int = 2) -> bool:
    span = loc.span
    return (
        span is not None
        and span.document_id == document_id
        and abs(span.start - start) <= slack
        and abs(span.end - end) <= slack
    )
