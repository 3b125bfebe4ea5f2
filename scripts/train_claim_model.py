"""Train the claim model (src/memspool/distill/claim_model.json) and report its cross-validation.

    python scripts/train_claim_model.py            # train, report, write the model
    python scripts/train_claim_model.py --report   # report only, write nothing
    python scripts/train_claim_model.py --trace-cues PHRASES   # write cues.txt from a phrase list

Labelled messages come from the tuning data only:

- ``tests/data/archivist_messages.jsonl``, splits ``tuned`` to ``tuned10``:
  the message's label says whether it holds a durable fact; a claim of a
  durable message is the fact when it overlaps one of the message's facts in
  ``tests/data/archivist_claims.jsonl`` (that fact's type), else chatter.
  The message's prompt (``context``) is a user message holding none.
- ``tests/data/sessions/*.jsonl`` rows with ``"split": "tune"``: each turn
  is a message; a claim holding one of a fact's anchors (said by the
  fact's speaker) is that fact, and a turn with such a claim holds one.

The held-out splits (``heldout``, ``heldout2``, sessions marked
``heldout``) are never read here: ``bench/archivist_quality.py`` and
``bench/archivist_sessions.py`` measure on them.

Three models (:mod:`memspool.distill.claim_model`): the message model over
every message, the claim model over the claims of the messages that hold a
fact, the type model over the facts. Each is L2-regularised logistic
regression (a softmax for types), fitted to its optimum by full-batch Adam
(numpy; the shipped model is read without it): the same data gives the same
file. Five-fold cross-validation,
grouped by message and by session project so nothing is scored by a model
that saw it, picks the operating points: the pair of thresholds that keeps
the most durable messages while at most KEEP_EPHEMERAL of the ephemeral
ones leave a kept claim, and the clarity (message x claim probability) at
which CLEAR_EPHEMERAL do.
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import json
import random
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from memspool.distill.claim_features import features, message_features  # noqa: E402
from memspool.distill.claim_model import (  # noqa: E402
    MessageVerdict,
    best_type,
    probability,
    type_features,
)
from memspool.distill.claims import Claim, claims  # noqa: E402

DATA = ROOT / "tests" / "data"
MESSAGES = DATA / "archivist_messages.jsonl"
FACTS = DATA / "archivist_claims.jsonl"
NOTES = DATA / "classify_notes.jsonl"
PROMPTS_DATA = DATA / "user_prompts.jsonl"
#: classify_notes.jsonl's splits the type model learns from ("dev" and "holdout"
#: measure it: tests/test_distill_classify.py).
NOTE_SPLITS = ("tune",)
SESSIONS = DATA / "sessions"
OUT = ROOT / "src" / "memspool" / "distill" / "claim_model.json"
CUES = ROOT / "src" / "memspool" / "distill" / "cues.txt"
TRAINING_SPLITS = ("tuned", "tuned2", "tuned3", "tuned4", "tuned5", "tuned6", "tuned7", "tuned8",
                   "tuned9", "tuned10")
TYPES = ("root-cause", "pitfall", "decision", "pattern", "preference", "takeaway")
#: At most this share of ephemeral messages may leave a kept claim (the goal is 3%).
KEEP_EPHEMERAL = 0.05
#: The context block's bar for a memory no second session corroborated: this share.
CLEAR_EPHEMERAL = 0.01
#: Messages written to mislead (``hard``) are counted at this share of each label,
#: the floor tests/data/README.md sets for every split (the tuning splits hold more).
HARD_SHARE = 0.3
FOLDS = 5
#: Full-batch Adam: steps and step size.
ITERATIONS = 300
RATE = 0.05
#: L2 weight of each model on the mean loss (cross-validated on the tuning splits).
MESSAGE_L2 = 1e-3
CLAIM_L2 = 1e-3
TYPE_L2 = 1e-2
SEED = 17
#: A feature seen in fewer examples than this is left out of the model.
MIN_COUNT = 2
#: Weights smaller than these are left out of the shipped file: they move no
#: verdict (the file stays small; the figures are the same with or without them).
KEPT_WEIGHT = 1e-3
KEPT_TYPE_WEIGHT = 1e-2
#: A claim is part of a fact when this share of its characters lies in the fact.
OVERLAP = 0.6
import os  # noqa: E402 - experiment switches

PROMPTS = not os.environ.get("NO_PROMPTS")
MESSAGE_L2 = float(os.environ.get("ML2", MESSAGE_L2))
CLAIM_L2 = float(os.environ.get("CL2", CLAIM_L2))
TYPE_L2 = float(os.environ.get("TL2", TYPE_L2))
SEED = int(os.environ.get("SEED", SEED))
MESSAGE_GRID = [step / 100 for step in range(5, 100, 2)]
CLAIM_GRID = [step / 10 for step in range(1, 10)]


@dataclasses.dataclass(frozen=True)
class ClaimExample:
    features: tuple[str, ...]
    durable: bool
    type: str | None
    text: str
    intro: str = ""


@dataclasses.dataclass(frozen=True)
class MessageExample:
    group: str
    source: str
    role: str
    features: tuple[str, ...]
    durable: bool
    claims: tuple[ClaimExample, ...]
    #: Written to look like the other label (tests/data/README.md, "hard").
    hard: bool = False


def _norm(text: str) -> str:
    text = re.sub(r"^\s*(?:[-*+\u2022]|\d{1,3}[.)])\s+", "", text, flags=re.MULTILINE)
    return " ".join(text.replace("**", "").replace("__", "").split()).lower()


def _fact_of(claim: Claim, facts: list[dict[str, str]]) -> dict[str, str] | None:
    text = _norm(claim.text)
    if not text:
        return None
    for fact in facts:
        norm = _norm(fact["text"])
        if text in norm or (len(norm) >= 20 and norm in text):
            return fact
        match = difflib.SequenceMatcher(None, text, norm, autojunk=False).find_longest_match(
            0, len(text), 0, len(norm))
        if match.size >= OVERLAP * len(text):
            return fact
    return None


def _anchored(claim: Claim, facts: list[dict[str, object]], by: str) -> dict[str, str] | None:
    text = claim.text.lower()
    for fact in facts:
        anchors = [str(a).lower() for a in fact["anchors"]]  # type: ignore[attr-defined]
        if fact.get("by", "assistant") == by and any(a in text for a in anchors):
            return {"type": str(fact["type"]), "text": claim.text}
    return None


def _message(group: str, source: str, role: str, text: str, fact_of: object,
             durable: bool | None = None, hard: bool = False) -> MessageExample:
    found = claims(text)
    labelled = []
    for claim in found:
        fact = fact_of(claim)  # type: ignore[operator]
        labelled.append(ClaimExample(tuple(features(claim, role)), fact is not None,
                                     None if fact is None else fact["type"], claim.text,
                                     claim.intro))
    holds = any(c.durable for c in labelled) if durable is None else durable
    return MessageExample(group, source, role, tuple(message_features(text, found, role)),
                          holds, tuple(labelled), hard)


def message_examples(splits: tuple[str, ...]) -> list[MessageExample]:
    rows = [json.loads(x) for x in MESSAGES.read_text(encoding="utf-8").splitlines() if x]
    facts = {r["id"]: r["facts"] for r in
             (json.loads(x) for x in FACTS.read_text(encoding="utf-8").splitlines() if x)}
    found: list[MessageExample] = []
    for row in rows:
        if row["split"] not in splits:
            continue
        group = f"m:{row['id']}"
        durable = row["label"] == "durable"
        marked = facts.get(row["id"], []) if durable else []
        if durable and not marked:
            continue  # no claim-level labels: the message says which, not where
        found.append(_message(group, row["split"], "assistant", row["text"],
                              lambda c, m=marked: _fact_of(c, m), durable, bool(row["hard"])))
        if row.get("context") and PROMPTS:
            found.append(_message(group, row["split"], "user", row["context"],
                                  lambda c: None, False))
    return found


def prompt_examples(split: str) -> list[MessageExample]:
    """tests/data/user_prompts.jsonl: a user's prompts, a rule or fact of theirs marked."""
    found: list[MessageExample] = []
    for line in PROMPTS_DATA.read_text(encoding="utf-8").splitlines():
        row = json.loads(line) if line.strip() else None
        if row is None or row["split"] != split:
            continue
        found.append(_message(f"p:{row['id']}", f"prompts-{split}", "user", row["text"],
                              lambda c, m=row["facts"]: _fact_of(c, m),
                              row["label"] == "durable", bool(row["hard"])))
    return found


def prompt_rates(scored: list[Scored], t_message: float, t_claim: float) -> tuple[float, float]:
    """(durable prompts kept, ephemeral prompts kept) among the labelled user prompts."""
    chosen = [s for s in scored if s.example.group.startswith("p:")]
    kept = [s.message >= t_message and any(p >= t_claim for p in s.claims) for s in chosen]
    durable = [k for s, k in zip(chosen, kept, strict=True) if s.example.durable]
    ephemeral = [k for s, k in zip(chosen, kept, strict=True) if not s.example.durable]
    return sum(durable) / max(1, len(durable)), sum(ephemeral) / max(1, len(ephemeral))


def session_examples(split: str) -> list[MessageExample]:
    found: list[MessageExample] = []
    for path in sorted(SESSIONS.glob("*.jsonl")) if SESSIONS.is_dir() else []:
        for line in path.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            session = json.loads(line)
            if session.get("split") != split:
                continue
            group = f"s:{session['project']}"  # a project's sessions share facts
            for turn in session["turns"]:
                role = "user" if "user" in turn else "assistant"
                text = str(turn.get(role) or "")
                if text.strip():
                    found.append(_message(group, f"sessions-{split}", role, text,
                                          lambda c, s=session, r=role: _anchored(
                                              c, s["facts"], r)))
    return found


# --- training -------------------------------------------------------------------------


def _matrix(rows: list[tuple[tuple[str, ...], object]]) -> tuple[list[str], Any, Any]:
    """The vocabulary (features in at least MIN_COUNT rows) and the rows as index arrays."""
    counts = Counter(name for found, _ in rows for name in set(found))
    vocab = sorted(name for name, count in counts.items() if count >= MIN_COUNT)
    index = {name: i for i, name in enumerate(vocab)}
    row_of, col_of = [], []
    for r, (found, _) in enumerate(rows):
        for name in set(found):
            if name in index:
                row_of.append(r)
                col_of.append(index[name])
    return vocab, np.array(row_of, dtype=np.int64), np.array(col_of, dtype=np.int64)


def _fit(rows: list[tuple[tuple[str, ...], object]], targets: Any, l2: float,
         weights_of_rows: Any = None) -> tuple[list[str], Any]:
    """Minimise the (row-weighted) mean cross-entropy plus ``l2 * |w|^2 / 2`` by
    full-batch Adam: the optimum, whatever the order of the rows (``targets``:
    one-hot, rows x classes)."""
    vocab, rows_at, cols_at = _matrix(rows)
    n, classes = targets.shape
    row_weights = np.ones(n) if weights_of_rows is None else weights_of_rows
    weights = np.zeros((len(vocab), classes))
    moment, velocity = np.zeros_like(weights), np.zeros_like(weights)
    for step in range(1, ITERATIONS + 1):
        logits = np.zeros((n, classes))
        np.add.at(logits, rows_at, weights[cols_at])
        if classes == 1:
            error = 1.0 / (1.0 + np.exp(-np.clip(logits, -30, 30))) - targets
        else:
            exps = np.exp(logits - logits.max(axis=1, keepdims=True))
            error = exps / exps.sum(axis=1, keepdims=True) - targets
        error = error * row_weights[:, None]
        grad = np.zeros_like(weights)
        np.add.at(grad, cols_at, error[rows_at])
        grad = grad / n + l2 * weights
        moment = 0.9 * moment + 0.1 * grad
        velocity = 0.999 * velocity + 0.001 * grad * grad
        weights -= RATE * (moment / (1 - 0.9 ** step)) / (
            np.sqrt(velocity / (1 - 0.999 ** step)) + 1e-8)
    return vocab, weights


def train_binary(rows: list[tuple[tuple[str, ...], bool]], l2: float, *,
                 balanced: bool = False) -> dict[str, float]:
    """Logistic regression; ``balanced`` weighs each class as much as the other in all
    (a message with little to go on then leans on its words, not on how rare
    durable messages are)."""
    labels = np.array([[1.0 if label else 0.0] for _, label in rows])
    row_weights = None
    if balanced:
        positive = max(1.0, float(labels.sum()))
        negative = max(1.0, len(rows) - positive)
        row_weights = np.where(labels[:, 0] > 0, len(rows) / (2 * positive),
                               len(rows) / (2 * negative))
    vocab, weights = _fit(rows, labels, l2, row_weights)  # type: ignore[arg-type]
    return {name: round(float(w), 4) for name, w in zip(vocab, weights[:, 0], strict=True)
            if abs(w) >= KEPT_WEIGHT}


def train_types(rows: list[tuple[tuple[str, ...], str]]) -> dict[str, list[float]]:
    targets = np.zeros((len(rows), len(TYPES)))
    for r, (_, kind) in enumerate(rows):
        targets[r, TYPES.index(kind)] = 1.0
    vocab, weights = _fit(rows, targets, TYPE_L2)  # type: ignore[arg-type]
    return {name: [round(float(w), 3) for w in row] for name, row in
            zip(vocab, weights, strict=True) if np.abs(row).max() >= KEPT_TYPE_WEIGHT}


def _typed(claim: ClaimExample, message: MessageExample) -> tuple[str, ...]:
    said = Claim(text=claim.text, kind="sentence", index=0, count=1, intro=claim.intro)
    return tuple(type_features(said, list(claim.features),
                               MessageVerdict(0.0, message.features)))


@dataclasses.dataclass
class Trained:
    message: dict[str, float]
    claim: dict[str, float]
    types: dict[str, list[float]]


def note_examples(splits: tuple[str, ...]) -> list[MessageExample]:
    """tests/data/classify_notes.jsonl: single notes with their type, for the type model."""
    found = []
    for line in NOTES.read_text(encoding="utf-8").splitlines():
        row = json.loads(line) if line.strip() else None
        if row is None or row["split"] not in splits:
            continue
        fact = {"type": row["type"], "text": row["text"]}
        found.append(_message(f"n:{row['text'][:40]}", "notes", "assistant", row["text"],
                              lambda c, f=fact: f, True))
    return found


def train(examples: list[MessageExample], notes: list[MessageExample]) -> Trained:
    message = train_binary([(m.features, m.durable) for m in examples], MESSAGE_L2,
                           balanced=True)
    claim = train_binary([(c.features, c.durable) for m in examples if m.durable
                          for c in m.claims], CLAIM_L2)
    types = train_types([(_typed(c, m), str(c.type)) for m in [*examples, *notes]
                         for c in m.claims if c.durable and c.type in TYPES])
    return Trained(message, claim, types)


# --- evaluation -----------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Scored:
    example: MessageExample
    message: float
    claims: tuple[float, ...]


def folds(examples: list[MessageExample]) -> list[tuple[list[MessageExample],
                                                        list[MessageExample]]]:
    groups = sorted({ex.group for ex in examples})
    random.Random(SEED).shuffle(groups)
    fold_of = {group: index % FOLDS for index, group in enumerate(groups)}
    return [([ex for ex in examples if fold_of[ex.group] != k],
             [ex for ex in examples if fold_of[ex.group] == k]) for k in range(FOLDS)]


def rates(scored: list[Scored], t_message: float, t_claim: float,
          ) -> tuple[float, float, int, int]:
    """(durable kept, ephemeral kept, durable count, ephemeral count) among the
    labelled assistant messages (tests/data/archivist_messages.jsonl).

    The tuning splits were written hard on purpose (tests/data/README.md: 35 to
    70% of them say something lasting-sounding and are not, or the reverse); the
    share kept of each label is counted as if HARD_SHARE of it were hard, the
    share the data's own rules set for every split, so the operating point is
    chosen for messages as they come, not for a set of traps."""
    chosen = [s for s in scored if s.example.group.startswith("m:")
              and s.example.role == "assistant"]

    def kept(s: Scored) -> bool:
        return s.message >= t_message and any(p >= t_claim for p in s.claims)

    def share(label: bool) -> float:
        hard = [kept(s) for s in chosen if s.example.durable == label and s.example.hard]
        easy = [kept(s) for s in chosen if s.example.durable == label and not s.example.hard]
        if not hard or not easy:
            found = hard + easy
            return sum(found) / max(1, len(found))
        return HARD_SHARE * sum(hard) / len(hard) + (1 - HARD_SHARE) * sum(easy) / len(easy)

    durable = sum(1 for s in chosen if s.example.durable)
    return share(True), share(False), durable, len(chosen) - durable


def pick(scored: list[Scored], ceiling: float,
         measure: object = None) -> tuple[float, float]:
    """The thresholds keeping the most durable messages with at most ``ceiling`` of the
    ephemeral ones kept (``measure``: the rates to read, assistant messages by default)."""
    rate = measure or rates
    best: tuple[float, float, float] | None = None
    for t_message in MESSAGE_GRID:
        for t_claim in CLAIM_GRID:
            durable, ephemeral = rate(scored, t_message, t_claim)[:2]  # type: ignore[operator]
            if ephemeral <= ceiling and (best is None or durable > best[0]):
                best = (durable, t_message, t_claim)
    return (0.99, 0.99) if best is None else (best[1], best[2])


def pick_clear(scored: list[Scored], t_claim: float, ceiling: float) -> float:
    for step in range(5, 100):
        clear = step / 100
        chosen = [s for s in scored if s.example.group.startswith("m:")
                  and s.example.role == "assistant" and not s.example.durable]
        leaked = sum(1 for s in chosen if any(p >= t_claim and p * s.message >= clear
                                               for p in s.claims))
        if leaked <= ceiling * max(1, len(chosen)):
            return clear
    return 0.99


def cross_validate(examples: list[MessageExample], notes: list[MessageExample],
                   ) -> tuple[list[Scored], float]:
    scored: list[Scored] = []
    right = total = 0
    for train_set, test in folds(examples):
        trained = train(train_set, notes)
        types = {k: tuple(v) for k, v in trained.types.items()}
        for ex in test:
            scored.append(Scored(ex, probability(list(ex.features), trained.message),
                                 tuple(probability(list(c.features), trained.claim)
                                       for c in ex.claims)))
            for c in ex.claims:
                if c.durable and c.type in TYPES:
                    total += 1
                    right += best_type(list(_typed(c, ex)), TYPES, types) == c.type  # type: ignore[arg-type]
    return scored, right / max(1, total)


def trace_cues(phrases: Path) -> int:
    """cues.txt from a list of ``phrase<TAB>group`` lines: each phrase with the first
    tuning example holding it; a phrase no tuning example holds is left out (and listed)."""
    rows = [json.loads(x) for x in MESSAGES.read_text(encoding="utf-8").splitlines() if x]
    rows = [r for r in rows if r["split"] in TRAINING_SPLITS]
    texts = [(r["id"], " ".join(str(r["text"]).lower().replace("\u2019", "'").split()))
             for r in rows]
    lines = ["# Cue phrases of the claim model, one per line: the phrase, its group, and the id",
             "# of a labelled example (tests/data/archivist_messages.jsonl, a tuning split) that",
             "# holds it, tab-separated. Groups: what a phrase usually signals (knowledge,",
             "# commentary, speculation, progress, ...); the model learns what each is worth.",
             "# `python scripts/train_claim_model.py --trace-cues LIST` rebuilds this file."]
    missing = []
    seen: set[str] = set()
    for raw in phrases.read_text(encoding="utf-8").splitlines():
        if not raw.strip():
            continue
        phrase, group = (part.strip() for part in raw.split("\t"))
        phrase = phrase.lower()
        if phrase in seen:
            continue
        seen.add(phrase)
        pattern = re.compile(rf"(?<![a-z]){re.escape(phrase)}(?![a-z])")
        found = next((key for key, text in texts if pattern.search(text)), None)
        if found is None:
            missing.append(phrase)
        else:
            lines.append(f"{phrase}\t{group}\t{found}")
    CUES.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"{len(seen) - len(missing)} cues written; {len(missing)} that no tuning example "
          f"holds left out")
    return 0


def check_cues() -> None:
    rows = {r["id"]: r for r in (json.loads(x) for x in
                                 MESSAGES.read_text(encoding="utf-8").splitlines() if x)}
    for line in CUES.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        phrase, _, example = line.split("\t")
        text = " ".join(str(rows[example]["text"]).lower().replace("\u2019", "'").split())
        if rows[example]["split"] not in TRAINING_SPLITS or phrase not in text:
            raise SystemExit(f"cue {phrase!r}: example {example} does not hold it")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--report", action="store_true", help="cross-validate only")
    parser.add_argument("--trace-cues", type=Path, metavar="PHRASES")
    args = parser.parse_args()
    if args.trace_cues:
        return trace_cues(args.trace_cues)
    check_cues()
    examples = (message_examples(TRAINING_SPLITS) + session_examples("tune")
                + prompt_examples("tuned"))
    sources = Counter(ex.source for ex in examples)
    print(f"{len(examples)} messages ({sum(ex.durable for ex in examples)} holding a fact), "
          f"{sum(len(ex.claims) for ex in examples)} claims, from "
          + ", ".join(f"{k} {v}" for k, v in sorted(sources.items())))
    notes = note_examples(NOTE_SPLITS)
    scored, type_accuracy = cross_validate(examples, notes)
    t_message, t_claim = pick(scored, KEEP_EPHEMERAL)
    u_message, u_claim = pick(scored, KEEP_EPHEMERAL, prompt_rates)
    clear = pick_clear(scored, t_claim, CLEAR_EPHEMERAL)
    durable, ephemeral, nd, ne = rates(scored, t_message, t_claim)
    print(f"cross-validated, message >= {t_message:.2f} and claim >= {t_claim:.2f}: "
          f"messages durable kept {durable:.1%} (of {nd}), ephemeral kept {ephemeral:.1%} "
          f"(of {ne}); clear at clarity >= {clear:.2f}")
    print(f"cross-validated, user prompts at message >= {u_message:.2f} and claim >= "
          f"{u_claim:.2f}: " + "rules kept {:.1%}, requests kept {:.1%}".format(
              *prompt_rates(scored, u_message, u_claim)))
    print(f"cross-validated type accuracy on durable claims: {type_accuracy:.1%}")
    if args.report:
        return 0
    trained = train(examples, notes)
    for split in ("heldout",):
        held_prompts = prompt_examples(split)
        named = [Scored(m, probability(list(m.features), trained.message),
                        tuple(probability(list(c.features), trained.claim) for c in m.claims))
                 for m in held_prompts]
        print(f"user prompts, {split} (never trained on): " + "rules kept {:.1%}, requests "
              "kept {:.1%}".format(*prompt_rates(named, u_message, u_claim)))
    held = note_examples(("dev", "holdout"))
    types = {k: tuple(v) for k, v in trained.types.items()}
    right = sum(best_type(list(_typed(m.claims[0], m)), TYPES, types) == m.claims[0].type  # type: ignore[arg-type]
                for m in held if m.claims)
    print(f"type accuracy on classify_notes dev+holdout (never trained on): {right}/{len(held)}")
    OUT.write_text(json.dumps({
        "trained_on": [*TRAINING_SPLITS, "sessions: tune", "user prompts: tuned"],
        "message_keep": {"assistant": t_message, "user": u_message},
        "claim_keep": {"assistant": t_claim, "user": u_claim}, "clear": clear,
        "types": list(TYPES),
        "message": trained.message, "claim": trained.claim, "type_weights": trained.types,
    }, sort_keys=True, separators=(",", ":")) + "\n", encoding="utf-8")
    print(f"{len(trained.message)} message weights, {len(trained.claim)} claim weights, "
          f"{len(trained.types)} type weights -> {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
