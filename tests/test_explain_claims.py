"""scripts/explain_claims.py: the claim model's verdict on each sentence of a message."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "explain_claims.py"


def _explain(text: str, *args: str) -> list[str]:
    proc = subprocess.run([sys.executable, str(SCRIPT), *args], input=text.encode(),
                          capture_output=True, timeout=60, check=True)
    return proc.stdout.decode().splitlines()


def test_each_claim_shows_its_verdict_and_the_notes_follow() -> None:
    lines = _explain("Found it. Pitfall: `pnpm install` without --frozen-lockfile rewrites "
                     "the lockfile on CI runners. I will put this in the README.")
    assert lines[0].startswith("assistant message: holds a durable fact p=")
    verdicts = {line.split("preference ")[-1].split("pitfall    ")[-1]: line.startswith("  KEEP")
                for line in lines[1:5]}
    assert verdicts == {"Found it.": False, "Pitfall:": False,
                        "`pnpm install` without --frozen-lockfile rewrites the lockfile on CI "
                        "runners.  (intro: 'Pitfall:')": True,
                        "I will put this in the README.": False}
    assert lines[-2:] == ["notes the minor pass makes: 1",
                          "  pitfall    `pnpm install` without --frozen-lockfile rewrites the "
                          "lockfile on CI runners."]


def test_a_slices_text_is_read_message_by_message_and_a_question_is_never_kept() -> None:
    lines = _explain("[user] why does checkout time out?\n\n[assistant] Let me look.\n")
    assert lines[0].startswith("user message:") and lines[1].endswith("why does checkout time out?")
    assert not any(line.startswith("  KEEP") for line in lines)
    assert lines[-1] == "notes the minor pass makes: 0 (2 messages, no durable claim)"


def test_a_persons_message_shows_their_own_bar_and_the_clarity_stored() -> None:
    from memspool.distill.claim_model import model

    used = model()
    lines = _explain("never run migrations from a laptop, the deploy workflow applies them",
                     "--role", "user")
    assert lines[0].startswith("user message: ")
    assert lines[0].endswith(f"clear at clarity {used.clear_user:.2f}")
    raw, stored = (float(x) for x in re.findall(r"clarity=([\d.]+) \(stored ([\d.]+)\)",
                                                lines[1])[0])
    # Both printed to three places: the scaled value of the rounded one, within one.
    assert abs(stored - used.on_agents_scale(raw, "user")) <= 0.0015 and stored != raw
