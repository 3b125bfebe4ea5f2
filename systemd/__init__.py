"""systemd user units shipped with memspool (data, not code)."""
