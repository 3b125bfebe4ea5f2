"""The word lists the near-duplicate comparison reads (``similarity.py``).

Data only: stop words, negations, number words, abbreviations, irregular
verbs, synonym groups, antonym pairs, preference and order words, and the
stemmer's suffixes. A change here changes what counts as the same fact, so
`python bench/dedup_quality.py` is the check after any edit.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "ADDITIVE",
    "ANTONYMS",
    "COMPARISON_STOP_WORDS",
    "EXPANSIONS",
    "IRREGULAR",
    "NEGATIONS",
    "ORDER_WORDS",
    "PREFERENCE_WORDS",
    "SCALES",
    "SUFFIXES",
    "SYNONYM_GROUPS",
    "TENS",
    "UNITS",
    "WHOLE_NUMBERS",
]

#: Words that say nothing about a note's subject when two notes are compared
#: (and when a key is made). The comparison's own list; search has another
#: (memspool.base.terms.SEARCH_STOP_WORDS), tuned on queries.
COMPARISON_STOP_WORDS: Final = frozenset({
    "a", "an", "the", "this", "that", "these", "those", "there", "here", "it", "its", "it's",
    "they", "them", "their", "we", "us", "our", "you", "your", "i", "me", "my", "he", "she",
    "his", "her", "him", "one", "ones", "some", "any", "all", "both", "each", "other", "such",
    "own", "same", "is", "am", "are", "was", "were", "be", "been", "being", "has", "have",
    "had", "having", "do", "does", "did", "doing", "done", "will", "would", "shall", "should",
    "can", "could", "may", "might", "must", "need", "needs", "needed", "require", "requires",
    "required", "ought", "to", "of", "in", "on", "at", "by", "for", "with", "about", "into",
    "onto", "through", "during", "from", "up", "out", "off", "as", "than", "then", "so", "thus",
    "therefore", "hence", "because", "since", "due", "cause", "causes", "caused", "causing",
    "reason", "result", "results", "resulting", "also", "too", "very", "just", "really",
    "actually", "quite", "and", "or", "but", "if", "when", "while", "where", "which", "who",
    "whom", "whose", "what", "why", "how", "whether", "again", "further", "once", "only",
    "most", "much", "many", "few", "lot", "lots", "get", "gets", "got", "getting", "make",
    "makes", "made", "making", "way", "ways", "thing", "things", "stuff", "something",
    "anything", "per", "via", "across", "within", "between", "against", "toward", "towards",
    "upon", "let", "lets", "like", "yes", "ok", "okay", "well", "still", "even", "ever",
    "already", "yet", "now",
})
#: Words that turn a statement round. "otherwise" is "if not" ("pin it, otherwise
#: results drift" says what "pin it so results do not drift" says).
NEGATIONS: Final = frozenset(
    {"not", "no", "never", "without", "nothing", "none", "nor", "cannot", "avoid", "instead",
     "rather", "otherwise", "prevent", "prevents", "prevented", "preventing"}
)
#: Words that turn a "not" before them into an addition ("not just", "not only").
ADDITIVE: Final = frozenset({"just", "only", "merely", "simply"})
#: Number words read as the numbers they name. "one" alone stays a stop word
#: ("one temp folder" says what "a temp folder" says); inside a number
#: ("twenty-one", "one hundred") it counts.
UNITS: Final = {
    word: value for value, word in enumerate((
        "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
        "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen",
        "eighteen", "nineteen",
    ))
}
TENS: Final = {
    "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70,
    "eighty": 80, "ninety": 90,
}
SCALES: Final = {"hundred": 100, "thousand": 1000, "million": 10**6, "billion": 10**9}
#: Words that are a number on their own and never part of a longer one.
WHOLE_NUMBERS: Final = {"twice": 2, "dozen": 12}
EXPANSIONS: Final = {
    "pr": ("pull", "request"), "prs": ("pull", "request"), "db": ("database",),
    "repo": ("repository",), "repos": ("repository",), "env": ("environment",),
    "dir": ("directory",), "dirs": ("directory",), "config": ("configuration",),
    "deps": ("dependency",), "args": ("argument",), "arg": ("argument",),
    "tmp": ("temp",), "msg": ("message",), "auth": ("authentication",),
}
IRREGULAR: Final = {
    "held": "hold", "ran": "run", "broke": "break", "broken": "break", "came": "come",
    "sat": "sit", "shrunk": "shrink", "shrank": "shrink", "wrote": "write", "written": "write",
    "took": "take", "taken": "take", "chose": "choose", "chosen": "choose", "fell": "fall",
    "kept": "keep", "found": "find", "left": "leave", "went": "go", "gone": "go",
    "threw": "throw", "thrown": "throw", "hung": "hang", "built": "build", "sent": "send",
    "spent": "spend", "caught": "catch", "brought": "bring", "began": "begin", "begun": "begin",
    "led": "lead", "lost": "lose", "met": "meet", "paid": "pay", "read": "read", "saw": "see",
    "seen": "see", "shown": "show", "stuck": "stick", "told": "tell", "thought": "think",
    "understood": "understand", "ate": "eat", "froze": "freeze", "frozen": "freeze",
    "knew": "know", "known": "know", "grew": "grow", "grown": "grow", "gave": "give",
    "given": "give", "drove": "drive", "driven": "drive", "hid": "hide", "hidden": "hide",
    "woke": "wake", "woken": "wake", "spun": "spin", "meant": "mean", "felt": "feel",
    "dealt": "deal", "bought": "buy", "fed": "feed", "said": "say", "slept": "sleep",
}
# Folded to the first word of their group: cheap synonyms common in engineering notes.
SYNONYM_GROUPS: Final = (
    ("respect", "honour", "honor", "obey"),
    ("whole", "entire"),
    ("big", "large", "huge", "giant"),
    ("small", "tiny", "little"),
    ("fast", "quick", "rapid"),
    ("slow", "sluggish"),
    ("break", "fail", "crash", "raise", "throw"),
    ("choose", "pick", "select", "opt"),
    ("start", "begin"),
    ("delete", "remove"),
    ("show", "display"),
    ("error", "exception"),
    ("fix", "repair"),
    ("stale", "outdated"),
    ("read", "load"),
    ("retire", "deprecate"),
    ("directory", "folder"),
    ("keep", "preserve", "retain"),
    ("past", "beyond"),
)
ANTONYMS: Final = (
    ("enable", "disable"), ("increase", "decrease"), ("min", "max"), ("minimum", "maximum"),
    ("more", "less"), ("more", "fewer"), ("fast", "slow"), ("faster", "slower"),
    ("high", "low"), ("higher", "lower"), ("true", "false"), ("sync", "async"),
    ("synchronous", "asynchronous"), ("start", "stop"), ("open", "close"), ("add", "delete"),
    ("allow", "deny"), ("allow", "block"), ("first", "last"), ("input", "output"),
    ("import", "export"), ("push", "pull"), ("local", "remote"), ("success", "failure"),
    ("include", "exclude"), ("encode", "decode"), ("lock", "unlock"), ("public", "private"),
    ("upper", "lower"), ("inner", "outer"), ("prefix", "suffix"), ("ascending", "descending"),
    ("old", "new"), ("valid", "invalid"), ("aware", "naive"), ("static", "dynamic"),
    ("above", "below"), ("short", "long"), ("small", "big"), ("early", "late"),
    ("accept", "reject"), ("safe", "unsafe"), ("client", "server"),
)
#: "X over Y", "X instead of Y", "X rather than Y", "X than Y": X is preferred to Y.
PREFERENCE_WORDS: Final = frozenset({"over", "instead", "rather", "than", "vs", "versus"})
#: "A before B" and "B after A" both mean A comes first.
ORDER_WORDS: Final = frozenset({"before", "after"})


#: (suffix, replacement, letters that must be left before it). The noun endings
#: need a longer stem: "connection" -> "connect", "compression" -> "compress",
#: but "option" and "action" stay whole.
SUFFIXES: Final = (
    ("ically", "ic", 3), ("ation", "ate", 3), ("ction", "ct", 3), ("ssion", "ss", 2),
    ("ness", "", 4), ("ing", "", 3), ("ed", "", 3), ("ly", "", 3),
)
