"""Which parts of an agent's answer will still be true next week.

The archivist's rules for transcripts favour precision: a wrong memory is
read at every later session start, a missed one only costs a re-discovery.
An assistant message is cut into blocks (paragraphs, a heading with what
follows it, the items of a learnings section); a block is kept when it
states knowledge and is not framed as the agent's own running commentary.

Kept: a root cause with its diagnosis, a pitfall or warning, a decision with
its reason, a convention of the codebase, a command or setting that worked,
a learnings item; also casual ("heads up: ...", "fwiw ..."). Dropped: the
agent narrating what it is about to do, progress reports, plans for the
current task, questions, acknowledgements, summaries of tool output,
speculation, restating the request; also when they contain trigger words
("Let me find the root cause", "I decided to look at the logs first").

User prompts are context, not memory, except an explicit request to
remember ("remember: ...", "note for later: ...").
"""

from __future__ import annotations

import re
from typing import Final

from memspool.distill.split import learnings_items

__all__ = ["durable_blocks", "remembered", "verdict"]

#: A block shorter than this says too little to be worth a memory.
MIN_BLOCK_CHARS: Final = 40

_FLAGS: Final = re.IGNORECASE | re.MULTILINE

#: Running commentary: the first words of a block that narrates, reports
#: progress, plans, acknowledges, restates the request or describes output.
_COMMENTARY: Final = re.compile(
    r"^\W{0,3}(?:"
    r"let me|let's|let us|i'll|i will|i'm going to|i am going to|i'm gonna|i'd like to"
    r"|i need to|i should|i want to|i'm (?:now|about|going|checking|looking|trying|running)"
    r"|i am (?:now|about|checking|looking|trying|running)|now,? (?:let me|i'll|i will|i)\b"
    r"|next,? (?:i|let|we)|first,? (?:i|let|we)|then,? (?:i|we)|after that|once that"
    r"|okay|ok\b|alright|all right|sure|got it|great|perfect|excellent|awesome|nice|thanks"
    r"|thank you|understood|will do|sounds good|good (?:catch|point|idea|question)"
    r"|you're right|you are right|absolutely|of course|no problem|happy to"
    r"|done\b|all (?:set|good|done)|all (?:\d+ )?(?:tests|checks|specs)"
    r"|(?:the )?(?:tests?|build|ci|lint|pipeline|checks?) (?:is |are )?(?:now )?"
    r"(?:pass|green|passing|succeed|fixed|running|done)"
    r"|moving on|on to|now (?:the|that|all|it|we)\b|that's (?:done|fixed|it)"
    r"|i've |i have (?:updated|added|created|changed|fixed|run|removed|made|written|finished)"
    r"|i (?:updated|added|created|changed|fixed|ran|removed|made|wrote|implemented|refactored"
    r"|renamed|moved|deleted|installed|found|checked|looked|read|tried|see|can see|noticed"
    r"|think|suspect|wonder|guess|believe|decided to (?:look|check|start|try|run|read"
    r"|investigate|dig|go|focus|begin|first))"
    r"|(?:here's|here is) (?:what|the (?:plan|summary|output|result|diff))"
    r"|(?:the |this )?(?:grep|search|output|command|logs?|test output|results?|diff|stack trace"
    r"|traceback|query|scan|listing|response)\b[^.\n]{0,40}\b(?:shows?|found|returned|contains"
    r"|lists?|says|has|have|gives?|prints?|reports?)"
    r"|looking at|looks like|it looks|it seems|seems like|i see\b|interesting"
    r"|maybe|perhaps|possibly|probably|might|could (?:it|this|that) be|not sure|hmm"
    r"|you want|you'd like|you would like|you're asking|you are asking|so you|to confirm"
    r"|if i understand|understood,? you"
    r"|would you|should i|shall i|do you|can you|could you|want me to|which (?:one|option)"
    r")",
    _FLAGS,
)

#: What knowledge sounds like: a label, a cause, a warning, a rule, a choice
#: with its reason, a convention, a command that worked.
_KNOWLEDGE: Final = re.compile(
    r"(?:^|\b)(?:"
    r"root[ -]cause|the (?:real )?cause|caused by|because|due to|turned out|the (?:problem|issue"
    r"|bug|culprit) (?:was|is)|the fix (?:was|is)|fixed by|the reason"
    r"|pitfall|gotcha|heads[ -]up|watch out|careful|beware|caveat|warning|note:|note that"
    r"|important|keep in mind|don't forget|remember"
    r"|decision|decided|we chose|chose|went with|opted|instead of|rather than|over\b|trade-?off"
    r"|always|never|must|don't|do not|avoid|make sure|ensure|requires?|needs? to be|unless"
    r"|only (?:works|when|if)|works (?:if|when|with|only)|doesn't work|does not work|breaks?"
    r"|silently|by default|defaults? to"
    r"|convention|in this (?:repo|codebase|project|code ?base)|we use|we're using|the pattern"
    r"|our|lives? in|are kept in|is kept in|goes? in"
    r"|til\b|lesson|learned|learning|takeaway|for future reference|fwiw|for the record"
    r"|the trick|the key (?:is|was)|workaround|solution"
    r")",
    _FLAGS,
)

#: A durable block that names its kind up front is kept even when short.
_LABELLED: Final = re.compile(
    r"^\W{0,3}(?:root cause|cause|pitfall|gotcha|heads[ -]up|decision|pattern|convention"
    r"|lesson|learning|takeaway|til|note|tip|fwiw|important|warning)\b\s*[:\-—]",
    _FLAGS,
)
_HEADING: Final = re.compile(r"^#{1,6}\s")
_LIST_ITEM: Final = re.compile(r"^\s*(?:[-*+•]|\d+[.)])\s+")
_QUESTION_END: Final = re.compile(r"\?\s*$")

#: A user's explicit request to keep something.
_REMEMBER: Final = re.compile(
    r"^\W{0,3}(?:please )?(?:remember|note for (?:later|the future)|for future reference"
    r"|keep in mind|memo)\b\s*(?:that\b)?\s*[:,\-—]?\s*(?P<fact>.+)",
    re.IGNORECASE | re.DOTALL,
)


def _blocks(text: str) -> list[str]:
    """Paragraphs; a heading stays with the paragraph after it."""
    blocks: list[str] = []
    pending = ""
    for raw in re.split(r"\n\s*\n", text):
        paragraph = raw.strip()
        if not paragraph:
            continue
        if _HEADING.match(paragraph) and "\n" not in paragraph:
            pending = f"{pending}\n{paragraph}".strip()
            continue
        blocks.append(f"{pending}\n{paragraph}".strip() if pending else paragraph)
        pending = ""
    if pending:
        blocks.append(pending)
    return blocks


def _body(block: str) -> str:
    """The block without a leading heading line (what the verdict reads)."""
    lines = block.split("\n")
    while lines and _HEADING.match(lines[0]):
        lines = lines[1:]
    return "\n".join(lines).strip()


def verdict(block: str) -> str | None:
    """Why ``block`` is not kept, or ``None`` when it is durable knowledge."""
    body = _body(block)
    if len(body) < MIN_BLOCK_CHARS and not _LABELLED.match(body):
        return "too short"
    first = _LIST_ITEM.sub("", body, count=1)
    if _LABELLED.match(first):
        return None
    if _COMMENTARY.match(first):
        return "commentary"
    if _QUESTION_END.search(body):
        return "question"
    if not _KNOWLEDGE.search(body):
        return "no knowledge marker"
    return None


def durable_blocks(text: str) -> list[str]:
    """The blocks of an assistant message worth keeping, in order.

    A learnings section gives one block per item; other blocks are judged
    by :func:`verdict`.
    """
    items = learnings_items(text)
    if items:
        return items
    return [block for block in _blocks(text) if verdict(block) is None]


def remembered(prompt: str) -> str | None:
    """The fact in a user's explicit "remember: ..." prompt, else ``None``."""
    match = _REMEMBER.match(prompt.strip())
    if match is None:
        return None
    fact = match.group("fact").strip()
    return fact if len(fact) >= MIN_BLOCK_CHARS // 2 else None
