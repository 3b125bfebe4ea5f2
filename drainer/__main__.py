"""``python -m memspool.drainer``."""

from __future__ import annotations

import sys

from memspool.drainer.modes import main

sys.exit(main())
