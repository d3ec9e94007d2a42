#!/usr/bin/env bash
# Builds the simtape wheel from BINARY (an already-built simtape), installs it into an empty
# venv, and runs the agents-sdk example's pytest test against it with no Rust toolchain on
# PATH. .ci/run calls it with the binary its tests built; docs/pytest.md says so.
#   python/simtape-wheel/check.sh target/debug/simtape [WORK_DIR]
set -euo pipefail
binary="$1"
work="${2:-$(mktemp -d)}"
repo="$(cd "$(dirname "$0")/../.." && pwd)"
rm -rf "$work/dist" "$work/venv" "$work/example" && mkdir -p "$work"

start=$(date +%s)
wheel=$(python3 "$repo/python/simtape-wheel/build_wheel.py" --binary "$binary" --out "$work/dist")
echo "wheel: $wheel ($(du -h "$wheel" | cut -f1), built in $(( $(date +%s) - start )) s)"

python3 -m venv "$work/venv"
# Only the venv and the system's directories: no cargo, no rustc, no SIMTAPE_BIN.
clean_path="$work/venv/bin:/usr/local/bin:/usr/bin:/bin"
if PATH="$clean_path" command -v cargo >/dev/null || PATH="$clean_path" command -v rustc >/dev/null; then
    echo "check.sh: a Rust toolchain is on $clean_path; the check needs one without" >&2
    exit 1
fi
run() { env -u SIMTAPE_BIN -u SIMTAPE_SEED PATH="$clean_path" "$@"; }
run "$work/venv/bin/pip" install --quiet --disable-pip-version-check "$wheel"
run simtape --version
# Read whole, then searched: `grep -q` on the pipe would end pytest early (SIGPIPE).
help=$(run "$work/venv/bin/python" -m pytest --help)
grep -q -- --simtape-seeds <<<"$help"
echo "the plugin is in place (pytest --help names --simtape-seeds)"

# The example agent's own requirements, then its test at two passing seeds.
run "$work/venv/bin/pip" install --quiet --disable-pip-version-check \
    -r "$repo/python/simtape-pytest/tests/requirements.txt"
cp -r "$repo/python/examples/agents-sdk" "$work/example"
(cd "$work/example" && run "$work/venv/bin/python" -m pytest -p no:cacheprovider --simtape-seeds 0,2 -q)
echo "wheel check: ok"
