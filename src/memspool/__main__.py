"""``python -m memspool`` runs the command line."""

from __future__ import annotations

import sys

from memspool.cli import main

sys.exit(main())
