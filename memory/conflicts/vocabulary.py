"""Word lists the conflict heuristics use (English): negations, opposites, values."""

from __future__ import annotations


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


NEGATIONS = frozenset(
    _words(
        "not no never none nobody nothing nowhere neither nor cannot without don't doesn't "
        "didn't isn't aren't wasn't weren't can't couldn't won't wouldn't haven't hasn't "
        "hadn't shouldn't dont doesnt didnt isnt arent wasnt werent cant wont anymore quit "
        "stopped"
    )
)
OPPOSITES = tuple(
    tuple(pair.split("/"))
    for pair in _words(
        "love/hate loves/hates loved/hated like/dislike likes/dislikes always/never "
        "married/divorced married/single alive/dead true/false open/closed enjoy/hate "
        "enjoys/hates allowed/forbidden vegan/omnivore"
    )
)
NUMBER_WORDS = {
    word: value
    for value, word in enumerate(
        _words(
            "zero one two three four five six seven eight nine ten eleven twelve thirteen "
            "fourteen fifteen sixteen seventeen eighteen nineteen twenty"
        )
    )
}
MONTHS = _words(
    "january february march april may june july august september october november december"
)
WEEKDAYS = _words("monday tuesday wednesday thursday friday saturday sunday")
# A swap inside one of these groups keeps the meaning ("love" / "really enjoy").
SAME_SENTIMENT = (
    frozenset(
        _words(
            "love loves loved enjoy enjoys enjoyed like likes liked adore adores fond really "
            "very much"
        )
    ),
    frozenset(_words("hate hates hated dislike dislikes disliked detest detests really very much")),
)
COLOURS = frozenset(
    _words(
        "red orange yellow green blue purple violet pink brown black white grey gray "
        "silver gold beige navy"
    )
)
VALUE_MARKERS = frozenset(
    _words(
        "is are was were am be been in at from to named called of for as near lives live "
        "lived works work worked moved studies study born"
    )
)
