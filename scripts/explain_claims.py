"""Why the minor pass keeps or leaves each sentence of a message: the claim model's verdicts.

    python scripts/explain_claims.py < message.txt              # an assistant's message
    python scripts/explain_claims.py --role user < prompt.txt   # a person's prompt
    python scripts/explain_claims.py --file slice.txt           # a slice's text ("[user] ...")

For one message: the message model's probability that it holds a durable
fact, then each claim (sentence or list item) with its probability of being
the fact, its clarity (the two multiplied; for a person's claim, the person's
rule model's), the type the type model gives it,
its introduction, and whether the keep rule keeps it. For a slice's text
(lines opening with ``[user]``, ``[assistant]``, ...) each message is shown
so. Then the notes the minor pass makes of the text, as
``memspool maintain`` would (``conditional``: kept only where they give a
memory its new value or restate one).

For reading a lost fact or a kept piece of chatter on one's own data; the
figures over the labelled sets are the benches' (``bench/archivist_quality.py``,
``bench/archivist_sessions.py``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from memspool.archivist.minor import notes_of
from memspool.distill.claim_model import judge, judge_message, model
from memspool.distill.claims import claims
from memspool.distill.messages import messages

#: Characters of a claim or an introduction shown on its line.
SHOWN = 110


def explain(text: str, role: str) -> list[str]:
    """The lines that explain one message said by ``role``."""
    found = claims(text)
    verdict = judge_message(text, found, role)
    used = model()
    weight = used.keep_weight[role]
    lines = [f"{role} message: holds a durable fact p={verdict.probability:.3f}; a claim is "
             f"kept at p >= {used.claim_keep[role]:.2f} when {weight:.2f} x the message's "
             f"log-odds + {1 - weight:.2f} x its own >= {used.keep_bar[role]:.2f}"
             + (f", or at clarity >= {used.user_keep:.2f}" if role == "user" else "")
             + f"; clear at clarity {used.clear_for(role):.2f}"]
    for claim in found:
        judged = judge(claim, role, verdict)
        intro = f"  (intro: {claim.intro[:40]!r})" if claim.intro else ""
        stored = used.on_agents_scale(judged.clarity, role)
        scale = "" if stored == judged.clarity else f" (stored {stored:.3f})"
        lines.append(f"  {'KEEP' if judged.keep else '    '} p={judged.probability:.3f} "
                     f"clarity={judged.clarity:.3f}{scale} {judged.type:<10} "
                     f"{' '.join(claim.text.split())[:SHOWN]}{intro}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--role", choices=("assistant", "user"), default="assistant",
                        help="who said a plain message (default: assistant)")
    parser.add_argument("--file", type=Path, help="read the text from this file, not stdin")
    args = parser.parse_args(argv)
    text = args.file.read_text(encoding="utf-8") if args.file else sys.stdin.read()
    said = [(m.role, m.text) for m in messages(text) if m.role in ("user", "assistant")]
    if not said:  # a plain message, not a slice's text
        said, text = [(args.role, text)], f"[{args.role}] {text}"
    for role, message in said:
        print("\n".join(explain(message, role)))
    notes, why = notes_of(text)
    print(f"\nnotes the minor pass makes: {len(notes)}" + (f" ({why})" if why else ""))
    for note in notes:
        kept = "" if note.only_if is None else f" [only if it {note.only_if}]"
        print(f"  {note.type:<10} {note.summary[:SHOWN]}{kept}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
