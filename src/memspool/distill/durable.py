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

from memspool.distill.durable_words import THRESHOLD, durable_probability
from memspool.distill.split import learnings_items

__all__ = ["durable_blocks", "remembered", "verdict"]

#: A block shorter than this says too little to be worth a memory.
MIN_BLOCK_CHARS: Final = 40

_FLAGS: Final = re.IGNORECASE | re.MULTILINE

#: Running commentary, sentence by sentence: the agent narrating or planning
#: its own next step, reporting progress, asking, acknowledging, guessing,
#: restating the request, or reading tool output aloud.
_COMMENTARY: Final = re.compile(
    r"^\W{0,3}(?:"
    # narration and plans: the agent's own next step
    r"let me|let's|let us|i'll|i will|i'm going to|i am going to|i'm gonna|i'd like to"
    r"|i'd (?:start|begin|go|suggest)|i need to|i should|i want to|i'm (?:now|about)"
    r"|i am (?:now|about)|i'm (?:checking|looking|trying|running|reading|going)"
    r"|now,? (?:let me|i'll|i will|i)\b|next,? (?:i|let|we)|first,? (?:i|let|we)"
    r"|then,? (?:i|we)\b|after that|once that|approach for|plan(?: for|:)|here's (?:the|my) plan"
    r"|next steps?\b|going to|gonna|(?:\w+ )?(?:first )?step:"
    r"|(?:hunting|chasing|digging|looking|checking|reading|grepping|running|starting|re-?checking|double-checking|trying|investigating"
    r"|waiting|retrying|rerunning|re-running|opening|searching|scanning|pulling|fetching)\b"
    # an interjection, then what the agent is doing: "Okay, opening the handler"
    r"|(?:okay|ok|alright|all right|right|now|next|so),? [a-z]+ing\b"
    r"|(?:ah,? |oh,? )?(?:you're right|you are right|fair point|good catch|good point"
    r"|understood|noted)\b"
    r"|i decided to (?:tackle|look|check|start|try|run|read|investigate|dig|go|focus|begin"
    r"|first|split|do)"
    # acknowledgements, when that is all the sentence says
    r"|(?:okay|ok|alright|all right|sure|got it|great|perfect|excellent|awesome|nice|thanks"
    r"|thank you|understood|will do|sounds good|good (?:catch|point|idea|question)"
    r"|you're right|you are right|absolutely|of course|no problem|happy to)\b[^.!?\n]{0,30}"
    r"(?:[.!?]|$)"
    # progress
    r"|done\b|all (?:set|good|done)|all (?:\d+ )?(?:tests|checks|specs)|moving on|on to\b"
    r"|that's (?:done|fixed|it)|pushing|pushed|opening (?:the |a )?pr|pr #?\d*\s*is"
    r"|(?:the )?(?:fix|change|patch|migration|build|ci|pipeline|branch|pr) (?:is|are) "
    r"(?:in|done|green|merged|pushed|up|open|ready|passing)"
    r"|(?:the )?(?:tests?|suite|build|ci|lint|pipeline|checks?)\b[^.\n]{0,40}?"
    r"\b(?:pass(?:es|ed)?|green|passing|succeeds?|succeeded)\b"
    r"|(?:root cause|issue|bug|problem) (?:addressed|fixed|resolved|solved)"
    # restating the request
    r"|you want|you'd like|you would like|you're asking|you are asking|so you\b|to confirm"
    r"|restating|to restate|(?:ok,? |okay,? )?so (?:the|your) (?:request|ask|task|goal|idea)\b"
    r"|so to make sure|to make sure i(?:'ve| have)? (?:got|understand)"
    r"|if i understand|just to (?:make sure|confirm|check)|so the (?:ask|request|task|goal)"
    r"|the (?:ask|task|goal) (?:is|here)|you(?:'re| are) after|you asked"
    # the agent speaking of its own state or next move: "I'm", "I'll", "I think",
    # "we'll"; a past action alone ("I moved X") is neutral
    r"|(?:so,? |and |but |also,? |ok,? |okay,? )?(?:i(?:'m|'ll|'d| am| will| would| need"
    r"| want| think| believe| guess| suspect| see| can| can't| cannot| don't| do not"
    r"| haven't| have not| wonder| wanted| plan| intend)|we(?:'ll| will| need| should"
    r"|'re going to| are going to| can))\b"
    r")",
    _FLAGS,
)
#: Anywhere in a sentence: uncertainty, a request, or output being read aloud.
_SPECULATION: Final = re.compile(
    r"\b(?:could be|might be|may be|might just|maybe|perhaps|possibly|not sure|i'd guess"
    r"|i guess|i suspect|i think|i wonder|my guess|hypothes[ie]s|none confirmed|not confirmed"
    r"|candidates? for|need (?:more|the) (?:data|traces|logs)|before i can|no idea"
    r"|want me to|would you|should i\b|shall i|do you (?:want|prefer)|can you"
    r"|could you|let me know|which (?:one|option) do"
    # hedging
    r"|likely|probably|seems? to|seems? like|appears? to|looks like|my hunch|theory|unclear"
    r"|i bet|almost certainly|(?:fairly|pretty|quite) (?:confident|sure)|would explain"
    r"|haven't (?:checked|verified|confirmed|looked)|to be sure\b|my bet|i assume"
    r"|before i (?:change|start|go|do|make|continue|proceed|merge|ship)"
    r"|(?:decision|answer|input|go-ahead) (?:i need )?from you|need from you"
    r"|unsure|not certain|tbd|to be confirmed"
    # progress
    r"|now pass(?:es)?|(?:is|are) (?:now )?green|all green|ready for review|lgtm|wrapped up"
    r"|successfully|(?:is|are) now (?:ready|working|done|complete|in place|live)"
    r"|ready for (?:use|production)|production[- ]ready"
    r"|exited (?:with|code)"
    r"|\d+ (?:examples|failures|failed|passed|warnings|errors|tests|specs)\b"
    r"|finished with \d+|next up|nothing changed yet|(?:that|this) did it|still need(?:s)?\b"
    r"|(?:changes|progress|status) so far|so far\b|\bprogress:|\b\d+ of (?:the |my )?\d+\b"
    r"|(?:first|second|initial) (?:pass|draft|cut|round) (?:is )?(?:done|ready|up|in)"
    r"|finished with \**\d|(?:is|are) (?:running|re-?running) now"
    r"|(?:running|doing) (?:it|that|those|this) next"
    r"|\bnow\.$|\bnext\.$|still open|remaining:|before this merges|before merging"
    r"|(?:is|are) (?:about |nearly |almost |mostly )?(?:half|partly|mostly|nearly|almost) "
    r"(?:done|written|finished|through|there)|should be (?:ready|done|up|back) (?:in|by)"
    r"|for this session|my job is|in this pr\b|for this pr\b|so i have it right"
    r"|for this (?:change|task|ticket|fix|branch|one|round|run)\b"
    r"|if i have it right|ticking off|closed the \S+ ticket"
    r"|[:;,\u2014-]\s*you(?:'d)? (?:want|like|need|asked)"
    # the agent's own next step, mid-sentence
    r"|i'll|i will|i'm going to|i'm (?:running|checking|looking|trying|reading)|before i touch"
    r"|i need to|i have to|i'd need|need to clarify|for your approval"
    r"|i (?:now )?have (?:all|enough|everything|what)|i've got (?:all|enough|what)"
    # output read aloud
    r"|it says)\b|\b(?:output|events|logs?)\s*:",
    _FLAGS,
)
_TOOL_OUTPUT: Final = re.compile(
    r"^\W{0,3}(?:the |this |`[^`]{1,80}`\s*)?(?:[\w-]+ ){0,3}"
    r"(?:grep|search|output|logs?|test output|results?|diff|stack trace|traceback|query|scan"
    r"|listing|response|eslint|mypy|tsc|linter|compiler|build log|ci log|report|events?)\b"
    r"[^.\n]{0,60}?\b(?:shows?|found|returned|returns|contains|lists?|says|has|have|gives?"
    r"|prints?|reports?)\b"
    r"|^\W{0,3}(?:[\w-]+ ){0,2}(?:reports|found|returned|lists|printed) \d"
    r"|^\W{0,3}(?:the |this )?(?:[\w-]+ ){0,3}(?:is|are|has|have|was) (?:~|about |over |under )?"
    r"[\d,]+ (?:lines|files|matches|rows|entries|errors|warnings|results|hits|commits"
    r"|packages|items|records)\b"
    r"|^\W{0,3}(?:the )?first (?:error|failure|warning|exception) (?:is|was|shows)"
    r"|^\W{0,3}(?:here(?:'s| is| are) (?:the|what)|it says|output:|events:)"
    # a command in backticks, then what it gave: "`terraform plan` for `prod`: ..."
    r"|^\W{0,3}`[^`\n]{0,80}\s[^`\n]{0,80}`(?:\s+(?:for|on|in)\s+`[^`\n]{1,80}`)?"
    r"\s*(?::|finished|failed|passed|returned|printed|exited|completed|reports?\b|shows?\b"
    r"|says\b)",
    _FLAGS,
)
#: What knowledge sounds like: a cause, a warning, a rule, a choice with its
#: reason, a convention, a command or setting that worked.
_KNOWLEDGE: Final = re.compile(
    r"(?:^|\b)(?:"
    r"root[ -]cause|the (?:real )?cause|caused by|because|due to|turned out|turns out"
    r"|the (?:problem|issue|bug|culprit|catch) (?:was|is)|what was going on|what happened"
    r"|came from|comes from|the fix (?:was|is)|fixed by|the reason|reason:|is that\b"
    r"|pitfall|gotcha|heads[ -]up|watch out|careful|beware|caveat|warning|note:|note that"
    r"|important|keep in mind|don't forget|remember|tip\b|fyi|fwiw|for the record|psa"
    r"|decision|decided|we chose|chose|went with|opted|instead of|rather than|trade-?off"
    r"|we're (?:dropping|keeping|moving|using|switching)|switched to|moved \S+ to"
    r"|always|never|must|don't|do not|avoid|make sure|ensure|requires?|needs?\b|unless"
    r"|only\b|works\b|worked|doesn't work|does not work|breaks?|silently|by default|default\b"
    r"|defaults? to|otherwise|so that|which means|means that"
    r"|convention|in this (?:repo|codebase|project|code ?base)|here:|we use|we're using"
    r"|the pattern\b|pattern(?: is|:| here| we use)|follows?|(?:is|are) kept in|lives? in"
    r"|goes? in|gets? \S+ from"
    r"|uses\b|reads\b|caches|expects|accepts|rejects|prints|shows where|freed|saves"
    r"|til\b|lesson|learned|learning|takeaway|for future reference|next time"
    r"|the trick|the key (?:is|was)|workaround|(?:the )?solution (?:is|was)|solution:|the fix\b"
    r"|deciding factor"
    r"|worth (?:keeping|remembering|knowing)|without (?:it|this|that)\b|bypass"
    r"|refuses?|refused|(?:has|have|needs?) to be\b|safe to\b|keep (?:that|this|it) in mind"
    r"|what (?:got|made|fixed|finally did) .{0,60}? was\b|is what (?:showed|fixed|made|did|caused)"
    r"|on its own\b"
    r"|fix(?:es)? it\b|skips?\b|blocks?\b|leaves\b|ignores?\b|overrides?\b|matches\b"
    r"|measures\b|returns\b|treats\b|hands? back|applies\b|regardless|whenever|if you ever"
    r"|isn't (?:reentrant|thread-safe|safe|supported|available)|not supported|no longer"
    r"|, not `|`, not\b|not [\w`]+, (?:but )?`|\bnot\b[^.\n]{0,30}\b(?:but|instead)\b"
    r"|^\W{0,3}(?:use|add|set|cast|run|pass|keep|put|prefer|pin) (?:a |an |the )?`"
    r"|(?:^|\. )(?:i |we )?(?:found|traced) (?:it|the|that)\b|rule in this|from now on"
    r"|keep an eye on|worth doing|the trick|what it took"
    r"|fails? (?:on|the|if|when)\b|in place\b"
    r")",
    _FLAGS,
)
#: A durable block that names its kind up front is kept even when short.
_LABELLED: Final = re.compile(
    r"^\W{0,3}(?:key (?:learning|takeaway|lesson|finding)s?|root cause|cause|pitfall|gotcha"
    r"|heads[ -]up|decision|pattern|convention|lesson|learning|takeaway|til|note|tip|fwiw"
    r"|note for (?:the )?future|for future reference"
    r"|fyi|psa|important|warning)\b\s*[:\-—]",
    _FLAGS,
)
#: Knowledge markers that weigh double: a cause, a rule, a warning stated outright.
_STRONG: Final = re.compile(
    r"\b(?:root[ -]cause|the reason|reason:|because|caused by|turned out|turns out|came from"
    r"|the fix (?:was|is)|pitfall|gotcha|heads[ -]up|never|always|must|don't|do not|avoid"
    r"|unless|instead of|rather than|convention|the pattern\b|pattern(?: is|:| here| we use)"
    r"|what was going on|what happened"
    r"|the (?:problem|issue|bug|culprit) was|lesson|learned|deciding factor"
    r"|worth (?:keeping|remembering|knowing)|without (?:it|this|that)\b)",
    _FLAGS,
)
_QUOTED: Final = re.compile(r"^\s*>", re.MULTILINE)
#: The sections of a session summary (Claude Code's compaction summary and the
#: like) that tell of this session only: its request, files, progress and plans.
_SESSION_SECTION: Final = re.compile(
    r"^\W{0,3}(?:\d+[.)]\s*)?(?:\*\*)?(?:primary request|(?:the )?user'?s? (?:request|intent)"
    r"|key technical concepts|files and code sections|(?:all )?user messages|pending tasks"
    r"|current (?:work|state|status)|(?:optional )?next steps?|summary of (?:the )?(?:work|changes"
    r"|conversation|session)|what (?:i|we) did|work done)\b", _FLAGS)
#: The scratchpad of a session summary (Claude Code's compaction prompt asks for one).
_ANALYSIS: Final = re.compile(r"<analysis>.*?(?:</analysis>|\Z)", re.IGNORECASE | re.DOTALL)
#: A line that titles a section: a markdown heading, or "3. Files and Code Sections:".
_SECTION_TITLE: Final = re.compile(r"^(?:#{1,6}\s+\S|\d+[.)]\s+[^\n]{1,60}:$)")
#: Work under way, anywhere in a message.
_IN_FLIGHT: Final = re.compile(
    r"\b(?:(?:is|are) (?:running|re-?running) now|running now|rerunning|re-running"
    r"|i'm (?:on|doing|rewriting|converting|working on|fixing|adding|starting)\b|so far\b"
    r"|still open|remaining\b|is pushed|pushed as|in progress|halfway|about to)"
    r"|\b(?:now|next)\.(?:\s|$)", _FLAGS)
#: A sentence telling what the agent did in this session ("I changed ...", "Updated ...").
_DID: Final = re.compile(
    r"^\W{0,3}(?:(?:i|we)(?:'ve| have)? )?(?:changed|replaced|reverted|updated|added|moved"
    r"|removed|renamed|rewrote|rewired|threaded|wired|bumped|fixed|gave|combined|wrapped"
    r"|converted|cherry-picked|checked out|compiled|ran|finished|extracted|mapped|deleted"
    r"|created|made|went through|tried)\b", _FLAGS)
#: A line that opens a list of steps for the task at hand.
_PLAN_HEADER: Final = re.compile(
    r"^\W{0,3}(?:(?:the |my )?plan\b[^:\n]{0,40}|here's (?:the|my) plan|(?:next )?steps?"
    r"|to-?do|todo)\s*:\s*$", _FLAGS)
#: A list item that reports a change made ("- Replaced the homepage", "- Added tests").
_CHANGE_ITEM: Final = re.compile(
    r"^\s*(?:[-*+•]|\d+[.)])\s+(?:\*\*)?(?:[A-Z][a-z]+ed|Made|Kept|Wrote|Built|Set|Put|Ran"
    r"|Split|Moved|Added|Removed|Fixed|Updated|Created|Implemented|Cleaned|Wired|Hooked)\b")
_LIST_LINE: Final = re.compile(r"^\s*(?:[-*+•]|\d+[.)])\s+")
_DONE_MARK: Final = "\u2705"
_SENTENCE_END: Final = re.compile(
    r"(?<=[.!?])\s+(?=[A-Z`*(\[])|\n(?=\s*(?:[-*+•]|\d+[.)])\s)"
    # lowercase chat ("nice. heads-up though: ..."), but not after "e.g." or "vs."
    r"|(?<=[a-z)`][.!?])(?<!\be\.g\.)(?<!\bi\.e\.)(?<!\bvs\.)(?<!\betc\.)(?<!\bcf\.)\s+(?=[a-z])")

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
    """Paragraphs; a heading or an introducing line stays with the paragraph after it."""
    blocks: list[str] = []
    pending = ""
    for raw in re.split(r"\n\s*\n", text):
        paragraph = raw.strip()
        if not paragraph:
            continue
        if (_HEADING.match(paragraph) and "\n" not in paragraph) or paragraph.endswith(":"):
            # A heading, or a line that introduces what follows ("fails with:"),
            # belongs with the next paragraph.
            pending = f"{pending}\n\n{paragraph}".strip()
            continue
        blocks.append(f"{pending}\n\n{paragraph}".strip() if pending else paragraph)
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


def _commentary(sentence: str, in_flight: bool = False) -> bool:
    first = _LIST_ITEM.sub("", sentence, count=1)
    return bool(_COMMENTARY.match(first) or _SPECULATION.search(sentence)
                or _TOOL_OUTPUT.match(first) or _QUESTION_END.search(sentence)
                or (in_flight and _DID.match(first)))


def _introduced_by_commentary(body: str, in_flight: bool) -> bool:
    """A list whose introducing line ("Changes so far:", "Plan for X:", "I'll do it in
    three steps:") is commentary: the list is a report or a plan of the task at hand."""
    first, _, rest = body.partition("\n")
    if not first.rstrip().endswith(":") or not _LIST_LINE.search(rest):
        return False
    last = [s for s in _SENTENCE_END.split(first) if s.strip()][-1]
    return bool(_PLAN_HEADER.match(last) or _commentary(last, in_flight))


def verdict(block: str, *, in_flight: bool = False) -> str | None:  # noqa: PLR0911
    """Why ``block`` is not kept, or ``None`` when it is durable knowledge.

    Each sentence is commentary (narration, progress, a question, a guess,
    output read aloud) or a statement; a statement that carries a knowledge
    marker is knowledge. A block is kept when it holds knowledge and its
    commentary does not outweigh it.
    """
    body = _body(block)
    if len(body) < MIN_BLOCK_CHARS and not _LABELLED.match(body):
        return "too short"
    if all(_QUOTED.match(line) for line in body.splitlines() if line.strip()):
        return "quoted (a draft or a paste, not a finding)"
    items = [line for line in body.splitlines() if _LIST_LINE.match(line)]
    changes = [line for line in items if _CHANGE_ITEM.match(line)]
    if (items and 2 * len(changes) >= len(items) and not _STRONG.search(body)) \
            or _DONE_MARK in block:
        return "a list of changes made (progress)"
    if items and _introduced_by_commentary(body, in_flight):
        return "a plan or a report of the task at hand"
    labelled = _LABELLED.match(_LIST_ITEM.sub("", body, count=1))
    if labelled and not _commentary(body[labelled.end():].strip()):
        return None
    sentences = [s for s in _SENTENCE_END.split(body) if s.strip()]
    commentary = [s for s in sentences if _commentary(s, in_flight)]
    knowledge = [s for s in sentences if s not in commentary and _KNOWLEDGE.search(s)]
    if not knowledge:
        return "commentary" if commentary else "no knowledge marker"
    weight = sum(2 if _STRONG.search(s) else 1 for s in knowledge)
    if len(commentary) >= weight:
        return "mostly commentary"
    return None


def durable_blocks(text: str) -> list[str]:
    """The blocks of an assistant message worth keeping, in order.

    A learnings section gives one block per item; other blocks are judged
    by :func:`verdict`.
    """
    items = learnings_items(text)
    if items:
        return items
    if durable_probability(text) < THRESHOLD:
        return []  # reads as commentary as a whole (see durable_words.py)
    # A summary's <analysis> part retells the session in order: a narrative.
    blocks = _blocks(_ANALYSIS.sub("", text))
    # A message that reports work under way ("rerunning now", "so far") tells of
    # this session's changes: its "I changed X because Y" is progress.
    in_flight = bool(_IN_FLIGHT.search(text))
    kept = [block for block in _outside_session_sections(blocks)
            if verdict(block, in_flight=in_flight) is None]
    if blocks and verdict(blocks[0], in_flight=in_flight) is not None \
            and _opens_with_commentary(blocks[0], in_flight):
        # "Good, I have what I need. Let me write the plan": what follows is the
        # deliverable of the current task (a plan, a report, a draft). Only what
        # states a cause, a rule or a warning outright is kept from it.
        kept = [block for block in kept if _STRONG.search(_body(block))]
    return kept


def _outside_session_sections(blocks: list[str]) -> list[str]:
    """The blocks not under a heading of a session summary ("7. Pending Tasks:",
    "## Current work"): a section runs until the next heading of its kind."""
    found: list[str] = []
    inside = False
    for block in blocks:
        first = block.split("\n", 1)[0].strip()
        if _SECTION_TITLE.match(first):
            inside = bool(_SESSION_SECTION.match(first.lstrip("#").strip()))
        if not inside:
            found.append(block)
    return found


def _opens_with_commentary(block: str, in_flight: bool = False) -> bool:
    body = _body(block)
    if _introduced_by_commentary(body, in_flight):
        return True
    sentences = [s for s in _SENTENCE_END.split(body) if s.strip()]
    return bool(sentences) and all(_commentary(s, in_flight) for s in sentences)


def remembered(prompt: str) -> str | None:
    """The fact in a user's explicit "remember: ..." prompt, else ``None``."""
    match = _REMEMBER.match(prompt.strip())
    if match is None:
        return None
    fact = match.group("fact").strip()
    return fact if len(fact) >= MIN_BLOCK_CHARS // 2 else None
