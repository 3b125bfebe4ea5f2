#!/usr/bin/env bash
# Lint the source tree with ruff, and type-check memspool with mypy --strict
# as it is laid out once installed.
#
# Why an installed copy: pyproject maps top-level folders into the one import
# name (spool/ is memspool.spool, hooks/ memspool.hooks, drainer/
# memspool.drainer, systemd/ memspool.systemd, tests/fixtures/transcripts
# memspool.samples), so from the checkout mypy finds only src/memspool and
# cannot resolve `memspool.spool`. A regular (non-editable) install into a
# temporary folder puts every module where users get it; it also fails loudly
# if a subpackage is missing from the package list. mypy's messages are mapped
# back to the source paths.
#
# The build runs on a copy of the working tree (tracked and untracked files,
# not ignored ones), because an in-tree build leaves build/ and rewrites
# memspool.egg-info in the checkout. pip fetches the build backend
# (setuptools) from the package index or its cache.
#
# Usage: scripts/typecheck.sh        (exit status 0 when both checks pass)
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
venv="$repo/.venv-test"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

mkdir "$tmp/src" "$tmp/site"
git ls-files -z --cached --others --exclude-standard \
    | while IFS= read -r -d '' path; do
        # A tracked file deleted in the working tree is simply not copied.
        [[ -e $path ]] && printf '%s\0' "$path"
    done \
    | tar --null --files-from=- -cf - \
    | tar -xf - -C "$tmp/src"
# The build's own chatter (setuptools deprecation notices) is shown only if it fails.
if ! "$venv/bin/pip" install --quiet --no-deps --no-compile --disable-pip-version-check \
        --target "$tmp/site" "$tmp/src" >"$tmp/pip.log" 2>&1; then
    cat "$tmp/pip.log" >&2
    echo "typecheck: building the installed copy failed (log above)" >&2
    exit 2
fi

# Longest installed prefix first, so memspool/spool/ wins over memspool/.
to_source='
import sys, tomllib
dirs = tomllib.load(open(sys.argv[1], "rb"))["tool"]["setuptools"]["package-dir"]
prefixes = sorted(((pkg.replace(".", "/") + "/", src.rstrip("/") + "/")
                   for pkg, src in dirs.items()), key=lambda p: -len(p[0]))
for line in sys.stdin:
    for installed, source in prefixes:
        if line.startswith(installed):
            line = source + line[len(installed):]
            break
    sys.stdout.write(line)
'

status=0
echo "== mypy --strict (installed layout)"
# Run from the install folder so its relative paths map back cleanly, with
# the checkout's [tool.mypy] settings.
(cd "$tmp/site" && "$venv/bin/mypy" --strict --config-file "$repo/pyproject.toml" \
    --cache-dir "$repo/.mypy_cache/installed" memspool) \
    | "$venv/bin/python" -c "$to_source" "$repo/pyproject.toml" || status=1

echo "== ruff check"
"$venv/bin/ruff" check . || status=1

exit "$status"
