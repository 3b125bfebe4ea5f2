"""What every timing bench prints first: the date, the interpreter and the machine."""

from __future__ import annotations

import datetime
import os
import platform
import sys


def print_header(title: str) -> None:
    """``title``, then the date, the interpreter timed (its path: not a launcher's) and
    the machine with its load average, so each figure reads beside where it came from
    (the machine is shared, and its load moves the figures)."""
    print(title)
    print(f"  date:     {datetime.date.today().isoformat()}")
    print(f"  python:   {platform.python_implementation()} {platform.python_version()} "
          f"({sys.executable})")
    print(f"  machine:  {platform.machine()}, {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.2f}")
