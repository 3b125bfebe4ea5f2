"""A slice's conversation, claim by claim, into notes: what the minor pass keeps.

Each message is cut into claims (:mod:`memspool.distill.claims`), the
message judged as a whole and each claim in it by the claim model
(:mod:`memspool.distill.claim_model`). A kept claim becomes a note:

- its summary is the claim itself, whole (cut only at a sentence or clause
  end, marked with "...", past SUMMARY_CHARS);
- a claim that opens by pointing back ("It", "This", "So") takes the
  sentence before it along, when that sentence is not chatter; the next
  kept sentence joins it (a problem and its fix are one note), and so does
  the next sentence just under the keep bar (CONTINUES_SHARE of it) when it
  points back in turn or shares a term with a sentence of the note; a
  lead-in between two kept sentences ("Fix:") does not part them, and is
  read with the sentence it introduces; nor do up to BRIDGED sentences under
  the bar (BRIDGE_SHARE of it or more, none a question or a type's label)
  before a kept sentence of the same paragraph, of which only those that
  point back ("That is why ...") enter the note;
- a list item takes its list's introduction ("The endpoint conventions:")
  when the introduction is not chatter;
- its key names the subject (:func:`~memspool.distill.keys.subject_key`).

A session summary (Claude Code's compaction summary: its known sections)
is judged on its findings sections only; the rest retells the session. A
learnings section ("## Key Learnings:") gives one note per item: its
writer said what is durable. A user's claims are judged by the same model (their role is one of its
features): "remember: ...", "I prefer ...", "never ..." are the user's
own rules; requests and questions are not. A session summary (Claude
Code's compaction summary) is read as the assistant's text. Chatter never
enters a note: every sentence of a note's text was judged, kept or taken
as context above the chatter bar. A blob (a hash, a dump, an encoded
payload: :mod:`memspool.distill.blobs`) is read as ``<blob>`` before any of
this, so no note holds one, and no pattern reads one.
"""

from __future__ import annotations

import dataclasses
import itertools
import re
from collections.abc import Iterator
from functools import lru_cache
from typing import Final

from memspool.distill.blobs import without_blobs
from memspool.distill.claim_features import asks
from memspool.distill.claim_model import (
    Model,
    Verdict,
    judge,
    judge_message,
    model,
)
from memspool.distill.claims import Claim, claims
from memspool.distill.classify import is_type_label
from memspool.distill.keys import sentence_case, subject_key, whole_summary
from memspool.distill.messages import messages
from memspool.distill.note import Note, Restates
from memspool.distill.similarity import (
    can_restate,
    index_terms,
    says_a_change,
    writes_a_setting,
)
from memspool.distill.split import learnings_items

__all__ = ["CONTEXT_SHARE", "notes_of", "transcript_notes"]

#: A sentence taken along as context must be kept itself and score at least this
#: share of the claim threshold: "heads up for next time:" or "Found it." would
#: bring chatter into the memory's text, which costs more than a missing subject.
CONTEXT_SHARE: Final = 1.0
#: Terms a sentence shares with the sentences of the fact before it when they are
#: about the same things, and how many of each sentence's terms are compared. One
#: is enough: a cause and its fix share few words ("a plain `ClusterIP` Service, and
#: kube-proxy balances TCP connections" / "order-svc sends every call over one
#: HTTP/2 connection"), and a fact cut in two is a fact no memory holds whole.
_SHARED_SUBJECT_TERMS: Final = 1
#: A sentence under the keep bar that goes on with the kept fact before it (see
#: _goes_on) joins it when its probability reaches this share of the bar.
CONTINUES_SHARE: Final = 0.9
#: Sentences under the keep bar between a kept fact and a kept sentence that goes on
#: with it do not part the two when there are at most BRIDGED of them and each
#: reaches BRIDGE_SHARE of the bar: a cause and its fix with the model's doubt between
#: them ("That is why it takes nine minutes on staging.", 0.33) are one memory.
BRIDGED: Final = 2
BRIDGE_SHARE: Final = 0.4
_SUBJECT_TERMS: Final = 12
_SUBJECT_CACHE: Final = 256
#: The words a sentence opens with when its subject is in the sentence before
#: (closed-class words: pronouns, determiners and connectives).
_POINTS_BACK: Final = re.compile(
    r"^\W{0,3}(?:it|its|it's|this|that|these|those|they|them|their|there|so|which|both"
    r"|otherwise|then|hence|thus|same|such|and|but|because|also|without it|without that)\b",
    re.IGNORECASE)
#: A word that joins a person's sentence to what they said before it ("and remember:").
_JOINED: Final = r"(?:(?:oh\s+)?(?:and|also|so)\s+)?"
#: A person's sentence that opens with the word joining it to their prompt: a new fact.
_JOINS_NEXT: Final = re.compile(r"^\W{0,3}(?:oh\s+)?(?:and|also|plus)\b", re.IGNORECASE)
#: The words a person asks memory itself to keep something with.
_KEEP_WORDS: Final = (r"remember|note for (?:later|the future)|for (?:future|later) reference"
                      r"|keep in mind|(?:don'?t|do not|never) forget")
#: A person naming what follows as said before: "reminder that X", "quick reminder: X"
#: (not "reminder texts go out twice", a subject).
_REMINDER: Final = (r"(?:(?:a|just a|quick|friendly|gentle)\s+)?reminder"
                    r"(?=\s+that\b|\s*:|\s+[-\u2014]|\u2014)")
#: A user's framing of a fact, left out of its summary: "remember: X" is X, and so is
#: "also X" (the word that joined it to the rest of the prompt).
_FRAMING: Final = re.compile(
    rf"^\W{{0,3}}{_JOINED}(?:(?:please\s+)?(?:{_KEEP_WORDS}|{_REMINDER}|note|fyi|btw|memo)\b"
    r"(?:\s+that\b)?\s*[:,\-\u2014]?\s*)?",
    re.IGNORECASE)
#: The assistant pointing back at the conversation before it restates a rule ("As
#: you asked last time, ...", "Per your rule, ..."): chatter, left out of the note,
#: so the restatement reads as the rule it restates.
_RESTATED: Final = re.compile(
    r"^\W{0,3}(?:(?:as|like) you (?:asked|said|requested|wanted|suggested|mentioned|"
    r"prefer)(?: (?:last time|earlier|before|yesterday))?|per your (?:rules?|requests?|"
    r"preferences?|instructions?|notes?))\s*[,:\u2014-]\s*", re.IGNORECASE)
#: Anywhere in an assistant's claim, words that say it applies what the person said
#: before ("no unwrap() outside tests, per your rule", "since you don't want changes
#: made with kubectl edit"): the claim restates a rule already in memory.
_REFERS_BACK: Final = re.compile(
    r"\b(?:(?:as|like|since) you (?:asked|said|requested|wanted|suggested|mentioned|"
    r"prefer(?:red)?)|per your\b|your (?:rules?|preferences?|conventions?|instructions?)\b"
    r"|(?:as|since) you (?:don't|do not|never) (?:want|like)"
    r"|(?:as|like) (?:we|you) (?:agreed|discussed|decided))", re.IGNORECASE)
#: Words that say a thing is said again, as it always is ("same as always", "the usual
#: applies", "as before"): said by a person or an agent, of a rule already known.
_RECURS: Final = re.compile(
    r"\b(?:(?:same|just) as (?:always|usual|before|last time)|as (?:always|usual|before)"
    r"|like (?:always|before|last time)|the usual\b|as (?:we|you) (?:agreed|decided|said))",
    re.IGNORECASE)
#: At most this many notes of one message (and as many kept on a condition): a
#: slice holds as many messages as a turn or a whole backfilled session, and what a
#: long session learnt is not cut at a count made for one capture call.
NOTES_PER_MESSAGE: Final = 20
#: A claim under the keep bar whose own probability reaches this is kept where it
#: says again, in a later session, what a memory says (the overlap bar of
#: reconciliation); below it, a claim is chatter whatever words it shares.
RESTATED_FLOOR: Final = 0.4
#: A person asking memory itself to keep a fact: "remember: X", "remember that X", "note
#: for the future: X", "for future reference: X", "keep in mind that X", "don't forget that
#: X" (a colon or "that" says a fact follows: "remember the login bug, fix it" and
#: "don't forget the changelog" are tasks). X is kept whatever the model makes of it (an
#: explicit request is obeyed, not judged), and counted clearly stated, when it reads as
#: a fact (see :func:`_asked`).
_ASKS_TO_KEEP: Final = re.compile(
    rf"^\W{{0,3}}{_JOINED}(?:please\s+)?(?:{_KEEP_WORDS})"
    r"(?:\s*[:\-\u2014]|\s+that\b|(?<=reference)\s*,)\s*", re.IGNORECASE)
#: The fewest words a fact asked to be kept has.
_ASKED_MIN_WORDS: Final = 3
#: What makes the words after the framing a task for now, not a fact: scoped to the task
#: at hand ("we're only touching the read path today"), addressed to the agent ("you",
#: "please"), or opening with a verb and its object, as an order does ("fix the import
#: ...", "push it ..."): the first word, then a determiner or a pronoun.
_FOR_NOW: Final = re.compile(
    r"\b(?:today|tonight|tomorrow|right now|for now|for the moment|this (?:morning|afternoon"
    r"|evening|week|sprint|session|task|pr|change|ticket|branch|time|round)"
    r"|in this (?:pr|change)|you|your|you're|please|pls|plz)\b"
    r"|^\W{0,3}[a-z]+\s+(?:the|a|an|this|that|these|those|it|them|my|our|all|up|out)\b",
    re.IGNORECASE)
#: A time of day, a one-off appointment ("the demo is at 3pm") unless something says it
#: comes back ("the nightly backup runs at 2am").
_CLOCK: Final = re.compile(r"\b\d{1,2}(?::\d\d)?\s?(?:am|pm)\b", re.IGNORECASE)
_RECURS_AT: Final = re.compile(r"\b(?:nightly|daily|weekly|hourly|every|each|always|cron)\b",
                               re.IGNORECASE)
#: A person's framing that reminds of something said before ("remember ...").
_REMINDS: Final = re.compile(
    rf"^\W{{0,3}}{_JOINED}(?:please\s+)?(?:remember|keep in mind|{_REMINDER})\b", re.IGNORECASE)
_ROLES: Final = {"assistant": "assistant", "summary": "assistant", "user": "user"}
#: The sections Claude Code's compaction prompt asks a session summary for, and
#: the two of them that hold findings; the others retell this session (its
#: request, files, messages, pending work and next step). A format, not phrasing.
_SUMMARY_SECTIONS: Final = (
    "primary request and intent", "key technical concepts", "files and code sections",
    "errors and fixes", "problem solving", "all user messages", "pending tasks",
    "current work", "optional next step")
_FINDINGS: Final = frozenset({"errors and fixes", "problem solving"})
#: A message naming this many of those sections is a session summary.
_SUMMARY_MIN_SECTIONS: Final = 3
_SECTION_LINE: Final = re.compile(
    r"^\W{0,4}(?:\d{1,2}[.)]\s*)?(?:\*\*)?(?P<title>[A-Za-z ]{4,40}?)(?:\*\*)?:\W*$|"
    r"^#{1,6}\s+(?:\d{1,2}[.)]\s*)?(?P<heading>[A-Za-z ]{4,40}?):?\s*$")
_ANALYSIS: Final = re.compile(r"<analysis>.*?(?:</analysis>|\Z)", re.IGNORECASE | re.DOTALL)


@dataclasses.dataclass
class _Group:
    role: str
    claims: list[Claim]
    verdicts: list[Verdict]
    context: str = ""


def _points_back(claim: Claim, role: str) -> bool:
    """The sentence's subject is in the one before it. A person's "and ...", "also
    ...", "oh and ..." joins a new fact to their prompt (as _FRAMING reads it), not
    the one before: "heron's limit is 8 concurrent requests per token. and keep the
    public api sync" are two facts."""
    if claim.kind != "sentence":
        return False
    if role == "user" and _JOINS_NEXT.match(claim.text):
        return False
    return bool(_POINTS_BACK.match(claim.text))


@lru_cache(maxsize=_SUBJECT_CACHE)
def _subject_terms(text: str) -> frozenset[str]:
    """The words a sentence is about: its content words' stems and the pieces of its
    code ("`transaction.on_commit(...)`" gives transaction, on_commit). Kept: each
    kept sentence is compared with the one before it and then with the one after."""
    return frozenset(index_terms(text, limit=_SUBJECT_TERMS))


def _goes_on(group: _Group, claim: Claim) -> bool:
    """The next sentence goes on with the group's fact: it points back ("It ...",
    "So ...") or is about the same things as any sentence of the fact so far
    ("`helm upgrade` that dies midway leaves ..." / "the way out is `helm rollback`
    ..., then upgrade again"): a problem and its fix, a rule and how it is kept, are
    one memory. A fix often names what the first sentence named, not the one just
    before it ("The `CMD` ... is in shell form ..." / "... the proxy answers those
    with 502." / "With the exec form, `CMD [...]`, the binary is PID 1 ...")."""
    if claim.kind != "sentence" or group.claims[-1].kind != "sentence":
        return False
    if _points_back(claim, group.role):
        return True
    said = frozenset().union(*(_subject_terms(c.text) for c in group.claims))
    return len(said & _subject_terms(claim.text)) >= _SHARED_SUBJECT_TERMS


def _kept_beside(group: _Group, claim: Claim) -> bool:
    """The next kept sentence is the group's fact going on: neighbouring sentences
    the model keeps are one memory, whatever words they share ("Every request to
    `/export` builds the whole CSV in memory ..." / "Streaming the rows through
    `StreamingResponse` ... keeps each process under 200 MB"): of the neighbouring
    sentences of the labelled facts, 85% are one fact, or a problem and the fix said
    right after it, and a model of the pair told the rest apart no better than
    joining them all (docs/benchmarks.md). List items stay a note each, and a
    person's "and ..." starts a new fact unless it is about the same things
    (:func:`_goes_on`)."""
    if group.role == "user" and _JOINS_NEXT.match(claim.text):
        return _goes_on(group, claim)
    return claim.kind == group.claims[-1].kind == "sentence"


def _leads_on(group: _Group, found: list[Claim], verdicts: list[Verdict], index: int) -> bool:
    """The sentence at ``index`` is a lead-in ("Fix:", "The way to handle it:", "The
    model isn't shared between processes:") that goes from the group's fact to the
    kept sentence it introduces, so the fact goes on across it, the lead-in read with
    that sentence: a cause and the fix said after "Fix:" are one memory. A lead-in
    kept or not: it says nothing alone, and what it introduces decides. Not a label
    that names a type ("Gotcha:", "Decision:", "Root cause:"): it opens a fact of its
    own. Not before a list (each item is a note of its own) nor before a sentence that
    does not go on with the group (:func:`_kept_beside`)."""
    claim = found[index]
    if claim.kind != "sentence" or not claim.text.endswith(":") or index + 1 == len(found) \
            or is_type_label(claim.text):
        return False
    after, verdict = found[index + 1], verdicts[index + 1]
    return verdict.keep and not after.introduces and _kept_beside(group, after)


def _bridged(group: _Group, found: list[Claim], verdicts: list[Verdict], index: int,
             floor: float) -> bool:
    """The sentence at ``index``, under the keep bar, is one of at most BRIDGED between
    the group's fact and a kept sentence that goes on with it (:func:`_kept_beside`),
    or a lead-in to one (:func:`_leads_on`: "That's the gaps, for every metric." /
    "Fix on our side: the role now passes ..."), each of them a statement at ``floor``
    or more (no question, no type's label), all in the paragraph the fact has reached:
    the gap does not part the fact. A new paragraph after a sentence not kept is a new
    fact ("In fly.toml I also set `kill_timeout = 30`. ..."), unless it opens with
    such a lead-in, which reads on from the fact wherever it stands, as it does right
    after it."""
    paragraph = group.claims[-1].block
    for ahead in range(index, min(len(found), index + BRIDGED + 1)):
        claim, verdict = found[ahead], verdicts[ahead]
        if ahead > index and _leads_on(group, found, verdicts, ahead):
            return True
        if claim.kind != "sentence" or claim.introduces or claim.block != paragraph \
                or is_type_label(claim.text):
            return False  # a label that names a type ("Gotcha:") opens a fact of its own
        if verdict.keep:
            return _kept_beside(group, claim)
        if verdict.probability < floor or asks(claim):
            return False
    return False


def _under_the_bar(group: _Group, found: list[Claim], verdicts: list[Verdict], index: int,
                   bars: tuple[float, float]) -> bool | None:
    """What the sentence at ``index``, under the keep bar and after the group's fact,
    does to it (``bars``: the continuation and bridge floors): ``True``, it joins the
    fact; ``False``, the fact goes on past it without it; ``None``, it ends the fact."""
    # The claim as found: one read with a lead-in before it is always kept (_leads_on).
    claim, verdict = found[index], verdicts[index]
    if claim.introduces:
        return None
    if verdict.probability >= bars[0] and _goes_on(group, claim):
        # Just under the bar, and about the fact before it: its fix or its
        # reason ("Set `pool_pre_ping=True` on the engine so ..."), not chatter.
        return True
    if _bridged(group, found, verdicts, index, bars[1]):
        # Between the fact and more of it: it joins the fact only when it points
        # back ("That is why ..."); one that does not may be chatter ("Worse than
        # before.").
        return _points_back(claim, group.role)
    return None


def _context(claim: Claim, intro: Verdict | None, before: tuple[str, Verdict] | None,
             role: str, floor: float) -> str:
    """What a note that starts at kept ``claim`` takes along: its list's introduction
    (``intro``: its verdict) or the sentence before it (``before``) that it points back
    to, when that is kept at ``floor``; else nothing."""
    if claim.intro:
        kept = intro is not None and intro.keep and intro.probability >= floor
        return claim.intro if kept else ""
    if before is not None and _points_back(claim, role) and before[1].keep \
            and before[1].probability >= floor:
        return before[0]
    return ""


def _groups(found: list[Claim], verdicts: list[Verdict], role: str,
            used: Model) -> Iterator[_Group]:
    floor = used.claim_keep[role] * CONTEXT_SHARE
    bars = (used.claim_keep[role] * CONTINUES_SHARE, used.claim_keep[role] * BRIDGE_SHARE)
    intros = {c.text: v for c, v in zip(found, verdicts, strict=True) if c.introduces}
    group: _Group | None = None
    lead_in = ""
    for index, (claim, verdict) in enumerate(zip(found, verdicts, strict=True)):
        if group is not None and _leads_on(group, found, verdicts, index):
            # "Fix:" between a cause and its fix: read with the fix (two in a row, both).
            lead_in = f"{lead_in} {claim.text}".lstrip()
            continue
        if lead_in:
            claim = dataclasses.replace(claim, text=f"{lead_in} {claim.text}")  # noqa: PLW2901 - the sentence with its lead-in
            lead_in = ""
        joins = None if group is None or verdict.keep else _under_the_bar(
            group, found, verdicts, index, bars)
        if group is not None and (joins or (verdict.keep and not claim.introduces
                                            and _kept_beside(group, claim))):
            group.claims.append(claim)
            group.verdicts.append(verdict)
            continue
        if joins is False:
            continue
        if group is not None:
            yield group
            group = None
        if verdict.keep and not claim.introduces:
            before = (found[index - 1].text, verdicts[index - 1]) if index else None
            group = _Group(role, [claim], [verdict], _context(
                claim, intros.get(claim.intro), before, role, floor))
    if group is not None:
        yield group


def _note(group: _Group, used: Model) -> Note:
    said = "\n".join(c.text for c in group.claims)
    lead = group.context
    restates: Restates = None
    if _RECURS.search(said):  # "run the tests on the SE sim like always"
        restates = "rule"
    elif group.role == "user":
        reminds = _REMINDS.match(lead) or _REMINDS.match(said)
        restates = "reminder" if reminds else "person"
    elif _REFERS_BACK.search(said):
        restates = "rule"
    framing = _FRAMING if group.role == "user" else _RESTATED
    said = framing.sub("", said, count=1)
    if group.role == "user" and said[:7].lower() == "not to ":
        said = f"don't {said[7:]}"  # "remember not to touch gen/" is "don't touch gen/"
    # A framing that introduces the fact ("and remember:" on a line of its own) is
    # no part of it either.
    lead = framing.sub("", lead, count=1).strip() if lead else lead
    if lead and group.claims[0].kind == "item":
        # "The endpoint conventions here:" + "one blueprint per resource".
        headline = f"{lead.rstrip(':').rstrip()}: {said}"
    elif lead:
        headline = f"{lead} {said}"
    else:
        headline = said
    summary = whole_summary(sentence_case(headline))
    body = f"{lead}\n{said}".strip() if lead else said
    best = max(group.verdicts, key=lambda v: v.probability)
    # As clear as its clearest claim: a person's rule said after their report of the
    # moment is the note's rule, however sure the shared model is of the report.
    clarity = max(v.clarity for v in group.verdicts)
    # An item's subject is its own ("Pool: `pool_max_conns=24` per pod"), not its
    # list's introduction, which the other items share.
    keyed = whole_summary(sentence_case(said)) if lead and group.claims[0].kind == "item" \
        else summary
    # Where the claims are in the text, so reconciliation can take a claim said
    # before out of a note: none when the lines do not add up (a framing took one).
    context_lines = lead.count("\n") + 1 if lead else 0
    claim_lines = tuple(claim.text.count("\n") + 1 for claim in group.claims)
    if context_lines + sum(claim_lines) != body.count("\n") + 1:
        claim_lines = ()
    return Note(type=best.type, summary=summary, body=body,
                key_text=subject_key(keyed),
                clarity=round(used.on_agents_scale(clarity, group.role), 4),
                restates=restates, context_lines=context_lines, claim_lines=claim_lines)


def _learning(item: str, used: Model) -> Note:
    found = claims(item) or [Claim(text=item, kind="item", index=0, count=1)]
    message = judge_message(item, found, "assistant", used)
    kind = judge(found[0], "assistant", message, used).type
    summary = whole_summary(item)
    return Note(type=kind, summary=summary, body=item, key_text=subject_key(summary))


def _findings_of_summary(text: str) -> str | None:
    """A session summary's findings sections ("Errors and fixes", "Problem Solving"),
    or ``None`` when ``text`` is not a session summary."""
    text = _ANALYSIS.sub("", text)
    sections: list[tuple[str, list[str]]] = [("", [])]
    for line in text.splitlines():
        match = _SECTION_LINE.match(line.strip())
        title = (match.group("title") or match.group("heading") or "").strip().lower() \
            if match else ""
        if title in _SUMMARY_SECTIONS:
            sections.append((title, []))
        else:
            sections[-1][1].append(line)
    if len({title for title, _ in sections if title}) < _SUMMARY_MIN_SECTIONS:
        return None
    return "\n".join(line for title, lines in sections if title in _FINDINGS for line in lines)


def transcript_notes(text: str, used: Model | None = None, *,
                     subagent: bool = False, conditional: bool = False) -> list[Note]:
    """The notes the claim model keeps from one conversation's text (a slice's); with
    ``conditional``, also the claims under the bar that say a value changed or that
    they are said again, as notes reconciliation keeps only where they give a memory
    its new value or restate one (:func:`_conditional`).

    In a subagent's transcript the prompts are the parent agent's task, not a
    person's words: they are never a user's rule, so only the answers count."""
    chosen = used or model()
    notes: list[Note] = []
    later: list[Note] = []
    for message in messages(text):
        role = _ROLES.get(message.role)
        if role is None or (subagent and role == "user"):
            continue
        said = without_blobs(message.text)
        if role == "assistant":
            findings = _findings_of_summary(said)
            said = said if findings is None else findings
        items = learnings_items(said) if role == "assistant" else []
        if items:
            # "## Key Learnings:": the writer says what is durable, one item a note.
            notes.extend(_learning(item, chosen) for item in items)
            continue
        found = claims(said)
        verdict = judge_message(said, found, role, chosen)
        verdicts = [judge(claim, role, verdict, chosen) for claim in found]
        if role == "user":
            verdicts = [_asked(claim, judged, chosen) for claim, judged in zip(found, verdicts,
                                                                                strict=True)]
        groups = list(_groups(found, verdicts, role, chosen))
        notes.extend(_note(group, chosen) for group in groups[:NOTES_PER_MESSAGE])
        if conditional:
            later.extend(itertools.islice(_conditional(found, verdicts, groups, role, chosen),
                                          NOTES_PER_MESSAGE))
    # Kept notes first: the conditional ones never push one past a caller's note cap.
    return [note for note in [*notes, *later] if note.summary]


def _asked(claim: Claim, verdict: Verdict, used: Model) -> Verdict:
    """``verdict``, kept and clearly stated when the person asked memory to keep the claim
    ("remember: the nightly export runs at 02:00 UTC", or after a "remember:" line) and
    it reads as a fact (:data:`_FOR_NOW`, :data:`_CLOCK`)."""
    if verdict.keep or claim.introduces or asks(claim):
        return verdict
    framed = _ASKS_TO_KEEP.match(claim.text)
    if framed is not None:
        fact = claim.text[framed.end():]
    else:
        # The framing on a line of its own before it ("remember:" as its list's intro,
        # or as the sentence before).
        before = claim.intro or claim.previous
        found = _ASKS_TO_KEEP.match(before) if before else None
        if found is None or found.end() != len(before) or not before.rstrip().endswith(":"):
            return verdict
        fact = claim.text
    if len(fact.split()) < _ASKED_MIN_WORDS or _FOR_NOW.search(fact) \
            or (_CLOCK.search(fact) and not _RECURS_AT.search(fact)):
        return verdict  # the task at hand: the model judges it as it would
    clear = used.clear_for("user")
    return dataclasses.replace(verdict, keep=True, probability=1.0,
                               message=max(verdict.message, clear),
                               stated=max(verdict.stated or 0.0, clear))


def _conditional(found: list[Claim], verdicts: list[Verdict], groups: list[_Group],
                 role: str, used: Model) -> Iterator[Note]:
    """The claims under the bar that say a value changed ("`statement_timeout` went
    from 5000 to 10000 ms") or write a setting with its value ("`kMaxFramesInFlight
    = 3` again"), or that they say again what was said before ("a request spec pls,
    same as always"): the model reads them as reports of work done or as requests,
    and they are, of work that changed what memory holds or that keeps a rule. Each
    is a note kept only where it gives a memory of an earlier session its new value
    (or, writing a setting, the setting's value as it stands), or restates one
    (reconciliation decides)."""
    taken = {id(claim) for group in groups for claim in group.claims}
    # Said again only by its words: offered last, so a long report's sentences
    # never crowd a value change out of the message's share of notes.
    by_overlap: list[Note] = []
    for claim, verdict in zip(found, verdicts, strict=True):
        if id(claim) in taken or verdict.keep or claim.introduces or asks(claim):
            continue  # a question states nothing, whatever values it names
        # The agent's account of a change made, or of a setting as it set it; a
        # person's "bump it to 8" is a request, which the agent's account follows
        # when it is carried out.
        changes = role == "assistant" and says_a_change(claim.text)
        if changes or (role == "assistant" and writes_a_setting(claim.text)):
            note = _note(_Group(role, [claim], [verdict]), used)
            yield dataclasses.replace(note, only_if="replaces")
            if changes and verdict.probability >= RESTATED_FLOOR \
                    and can_restate(claim.text, "overlap"):
                # A change that replaces nothing may still say a rule again ("the
                # prod apply goes through `apply.yml`"): offered as that, after it.
                by_overlap.append(dataclasses.replace(note, only_if="restates"))
        elif _REFERS_BACK.search(claim.text) or _RECURS.search(claim.text):
            yield dataclasses.replace(_note(_Group(role, [claim], [verdict]), used),
                                      only_if="restates", restates="rule")
        elif verdict.probability >= RESTATED_FLOOR and (
                role == "assistant" or (verdict.stated or 0.0) >= used.clear_for("user")) \
                and can_restate(claim.text, "overlap" if role == "assistant" else "reminder"):
            # A fact-like claim in the agent's report of work done ("I changed the
            # replica count in the chart instead of running `kubectl scale`, since
            # Argo ..."): a rule of an earlier session applied, when it says that
            # rule's words again (reconciliation's overlap bar). A person's rule said
            # again in passing ("and no prisma mocks in the tests for any of this"),
            # as clearly a rule of theirs as the context block asks of one: their rule
            # of an earlier session, into a rule of theirs only, at the rule bar when
            # they stated it clearly, else the reminder bar (reconciliation's
            # "person"). A person's aside or report ("Rev B boards on the same probe
            # are fine") is none, whatever words it shares.
            by_overlap.append(dataclasses.replace(
                _note(_Group(role, [claim], [verdict]), used), only_if="restates",
                restates=None if role == "assistant" else "person"))
    yield from by_overlap


def notes_of(text: str, *, subagent: bool = False) -> tuple[list[Note], str]:
    """The notes of one slice's text (with the value changes under the bar), and,
    when none is kept outright, why (for the report)."""
    notes = transcript_notes(text, subagent=subagent, conditional=True)
    if any(note.only_if is None for note in notes):
        return notes, ""
    if notes:
        return notes, "no durable claim; only changed values and restatements, kept if they " \
            "replace or restate a memory"
    said = [m for m in messages(text) if m.role in _ROLES]
    if not any(m.role != "user" for m in said):
        return [], "no assistant text (prompts, tool calls or thinking only)"
    return [], f"{len(said)} message{'' if len(said) == 1 else 's'}, no durable claim"
