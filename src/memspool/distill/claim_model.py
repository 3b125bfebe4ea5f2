"""The claim model: which claims of a message are durable facts, and of what type.

Two stages, each a linear model over the features of
:mod:`memspool.distill.claim_features`, trained by
``scripts/train_claim_model.py`` on labelled data (the tuning splits of
``tests/data``, never the held-out ones) and shipped as ``claim_model.json``
beside this module:

1. the message: logistic regression over a whole message's framing: does
   it hold a durable fact at all? A plan, a guess, a question or a report
   of work done does not, whatever facts it names along the way;
2. the claim: logistic regression, trained on the messages that do hold
   one: is this sentence or item the fact, or the chatter beside it ("Found
   it.", "I'll put this in gunicorn.conf.py.")?

A claim is kept when its probability reaches ``claim_keep`` and its score
reaches ``keep_bar``: ``keep_weight`` of the message's log-odds plus the
rest of the claim's, so a short message whose one sentence is plainly a
fact is not lost to a lukewarm message score, nor a fact-like sentence in a
plan kept for its own. Weight, floor and bar are per role, chosen together
by cross-validation (the most durable messages kept with at most 5% of the
ephemeral ones, or of plain requests). Its *clarity* is the product of the two
probabilities; at ``clear`` and above it is clearly stated, what the
context block asks of a memory no second session has corroborated yet.

A person's claim is kept by the same rule (the searchable tier stays
generous), but how clearly it states a rule of theirs is read by a model of
its own, ``user_rule``: logistic regression over the same claim features,
trained on every claim of the person's prompts (the labelled prompts and
those of every tuning session), a rule of theirs against the rest. Their
prompts mix a rule with reports, requests and asides ("new intern managed
to jam the espresso grinder with a whole dog biscuit, so thats my morning",
0.95 by the shared claim model), and the shared model, which learns from
the agent's words many times over, ranks a rule above another of the
person's kept claims in 65% of pairs of the tuning sessions, this one in 85%
(each file read by a model trained without it). Its bar, ``clear_user``,
lets at most 3% of the prompts of whole sessions that hold no rule of the
person's leave a clearly stated claim. A claim it all but rules out (under
``user_floor``, set so that at most 1% of the person's kept rules fall under
it) is not kept at all: "the coffee machine on our floor died again so im
running on fumes". One it reads at ``user_keep`` or more is kept whatever the
shared models say: a rule said inside a request ("a request spec pls, not a
controller spec, same as always"), which the message model reads, rightly, as a
request, and whose score it would sink. A note's clarity is given on the agent's scale
(:meth:`Model.on_agents_scale`), so one bar reads every memory.
A question ("the rows are still missing?") is never kept: it states nothing.
A third model, a softmax over the note types, names the kind of fact.

Scoring is a sum of weights: pure Python, no dependency, microseconds a claim.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Iterable
from functools import cache
from importlib.resources import files
from typing import Final, cast

from memspool.base.kinds import NOTE_TYPES, NoteType
from memspool.distill.claim_features import asks, features, message_features
from memspool.distill.claims import Claim
from memspool.distill.classify import classify

__all__ = [
    "MODEL_FILE", "MessageVerdict", "Model", "Verdict", "judge", "judge_message", "keeps", "model",
]

MODEL_FILE: Final = "claim_model.json"
_MAX_LOGIT: Final = 30.0


@dataclasses.dataclass(frozen=True)
class Model:
    """The shipped weights and the operating points."""

    #: Per role (``assistant``, ``user``): a prompt is judged by its own rule.
    keep_weight: dict[str, float]
    claim_keep: dict[str, float]
    keep_bar: dict[str, float]
    clear: float
    #: The clarity a person's claim needs to be clearly stated (read by ``user_rule``).
    clear_user: float
    message: dict[str, float]
    claim: dict[str, float]
    #: How clearly a person's claim states a rule of theirs (see the module's docstring).
    user_rule: dict[str, float]
    #: A person's claim ``user_rule`` reads under this is not kept, whatever the claim
    #: model says: an aside or a report of the moment.
    user_floor: float
    #: A person's claim ``user_rule`` reads at or over this is kept, whatever the
    #: shared models (the message's and the claim's) make of it.
    user_keep: float
    types: tuple[NoteType, ...]
    type_weights: dict[str, tuple[float, ...]]

    @classmethod
    def from_json(cls, raw: dict[str, object]) -> Model:
        types = tuple(cast(list[str], raw["types"]))
        for name in types:
            if name not in NOTE_TYPES:
                raise ValueError(f"{MODEL_FILE} names an unknown note type {name!r}")
        weights = cast(dict[str, list[float]], raw["type_weights"])

        def table(name: str) -> dict[str, float]:
            return {k: float(v) for k, v in cast(dict[str, float], raw[name]).items()}

        def number(name: str) -> float:
            return float(cast(float, raw[name]))

        return cls(keep_weight=table("keep_weight"), claim_keep=table("claim_keep"),
                   keep_bar=table("keep_bar"),
                   clear=number("clear"), clear_user=number("clear_user"),
                   message=table("message"), claim=table("claim"),
                   user_rule=table("user_rule"), user_floor=number("user_floor"),
                   user_keep=number("user_keep"),
                   types=cast(tuple[NoteType, ...], types),
                   type_weights={k: tuple(float(x) for x in v) for k, v in weights.items()})

    def clear_for(self, role: str) -> float:
        """The clarity at which a claim said by ``role`` is clearly stated."""
        return self.clear_user if role == "user" else self.clear

    def on_agents_scale(self, clarity: float, role: str) -> float:
        """``clarity`` of a claim said by ``role``, scaled so that ``role``'s bar falls on
        ``clear``: a memory's clarity is read against one bar, whoever said it. The
        agent's comes back as it is."""
        bar = self.clear_for(role)
        return clarity if bar == self.clear else min(1.0, clarity * self.clear / bar)


@dataclasses.dataclass(frozen=True)
class Verdict:
    """What the model says of one claim in its message."""

    #: The claim's probability of being the fact, given a message that holds one.
    probability: float
    #: The message's probability of holding a durable fact.
    message: float
    type: NoteType
    keep: bool
    #: A person's claim: how clearly it states a rule of theirs (``Model.user_rule``);
    #: ``None`` for the agent's.
    stated: float | None = None

    @property
    def clarity(self) -> float:
        """How clearly the claim is stated: the person's by their own model, the
        agent's as the two probabilities multiplied."""
        return self.probability * self.message if self.stated is None else self.stated


@dataclasses.dataclass(frozen=True)
class MessageVerdict:
    """What the model says of a whole message: how likely it holds a durable fact, and
    its features (the type model reads them beside each claim's)."""

    probability: float
    features: tuple[str, ...]
    #: The type model's scores of the message's features, one per type, summed once
    #: for all its claims (:func:`judge_message`): a long message has thousands of
    #: features and hundreds of claims, and summing them again for each claim made
    #: its digest take time in the square of its length. Empty: not summed yet.
    type_scores: tuple[float, ...] = ()


def _marked(claim: Claim) -> str:
    return f"marked:{classify(f'{claim.intro} {claim.text}'.strip())}"


def type_features(claim: Claim, claim_features: list[str], message: MessageVerdict,
                  ) -> list[str]:
    """What the type model reads: the claim's features, its message's (marked), and
    the type its leading label or wording names by the marker rules
    (:func:`memspool.distill.classify.classify`), which the model learns to weigh."""
    return [*claim_features, *(f"m{name}" for name in message.features), _marked(claim)]


@cache
def model() -> Model:
    """The shipped model (read once per process)."""
    raw = json.loads(files("memspool.distill").joinpath(MODEL_FILE).read_text(encoding="utf-8"))
    return Model.from_json(raw)


def _logit(chance: float) -> float:
    chance = min(max(chance, 1e-6), 1 - 1e-6)
    return math.log(chance / (1 - chance))


def keeps(used: Model, role: str, message: float, claim: float) -> bool:
    """Whether a claim of ``claim`` probability in a message of ``message`` is kept."""
    weight = used.keep_weight[role]
    return claim >= used.claim_keep[role] and (
        weight * _logit(message) + (1 - weight) * _logit(claim) >= used.keep_bar[role])


def _sigmoid(logit: float) -> float:
    logit = max(-_MAX_LOGIT, min(_MAX_LOGIT, logit))
    return 1.0 / (1.0 + math.exp(-logit))


def probability(found: list[str], weights: dict[str, float]) -> float:
    """The logistic model's probability for a list of features."""
    return _sigmoid(sum(weights.get(name, 0.0) for name in found))


def _type_scores(found: Iterable[str], weights: dict[str, tuple[float, ...]],
                 start: Iterable[float]) -> list[float]:
    """``start`` plus each type's weights of the features ``found``."""
    totals = list(start)
    for name in found:
        row = weights.get(name)
        if row is not None:
            for index, weight in enumerate(row):
                totals[index] += weight
    return totals


def _highest(types: tuple[NoteType, ...], totals: list[float]) -> NoteType:
    return types[max(range(len(types)), key=totals.__getitem__)]


def best_type(found: list[str], types: tuple[NoteType, ...],
              weights: dict[str, tuple[float, ...]]) -> NoteType:
    """The type whose weight vector scores ``found`` highest."""
    return _highest(types, _type_scores(found, weights, [0.0] * len(types)))


def _message_type_scores(names: Iterable[str], used: Model) -> tuple[float, ...]:
    """The type model's scores of a message's features (marked as its message's)."""
    return tuple(_type_scores((f"m{name}" for name in names), used.type_weights,
                              [0.0] * len(used.types)))


def judge_message(text: str, found: list[Claim], role: str, chosen: Model | None = None,
                  ) -> MessageVerdict:
    """The verdict on a whole message (``found``: its claims) said by ``role``."""
    used = chosen or model()
    names = message_features(text, found, role)
    return MessageVerdict(probability(names, used.message), tuple(names),
                          _message_type_scores(names, used))


def judge(claim: Claim, role: str, message: MessageVerdict, chosen: Model | None = None,
          ) -> Verdict:
    """The verdict on ``claim`` said by ``role`` in ``message``. A question is never
    the fact (probability 0), whatever its words weigh."""
    used = chosen or model()
    found = features(claim, role)
    question = asks(claim)
    chance = 0.0 if question else probability(found, used.claim)
    stated = None if role != "user" else 0.0 if question else probability(found, used.user_rule)
    # The message's share of the scores is summed once (judge_message); each claim
    # adds its own features' (type_features' sum, in another order).
    start = message.type_scores or _message_type_scores(message.features, used)
    totals = _type_scores([*found, _marked(claim)], used.type_weights, start)
    kept = keeps(used, role, message.probability, chance) and (
        stated is None or stated >= used.user_floor)
    return Verdict(probability=chance, message=message.probability,
                   type=_highest(used.types, totals),
                   keep=kept or (stated is not None and stated >= used.user_keep),
                   stated=stated)
