#!/usr/bin/env bash
# Runs simtape's fuzz targets under AFL++ for a fixed number of executions each, one after
# another, and prints each one's executions, speed, crashes and hangs (docs/fuzzing.md).
#
#   fuzz/run.sh TARGET EXECS     one target (a name from fuzz/targets/src/lib.rs, TARGETS)
#   fuzz/run.sh all EXECS        every target in turn
#   fuzz/run.sh list             the target names
#
# Needs `cargo install cargo-afl` (its AFL++ is built for the toolchain at install time).
# Findings land in $SIMTAPE_FUZZ_OUT/<target>/default/{crashes,hangs}/ (default:
# fuzz/afl/target/fuzz-out). A target whose output directory already holds a campaign
# resumes it, so its execution count adds up over several runs; delete the directory to
# start afresh. SIMTAPE_FUZZ_SECONDS=N also stops each target after N seconds of fuzzing,
# whichever comes first (AFL's `-V`). The fuzzer runs at the lowest CPU priority and binds
# no core.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

targets=(tape_reader oracle_diff scenario llm_fixture mcp_cassette world_spec process_tape
         mcp_stdio serve_endpoints)

usage() {
    echo "usage: fuzz/run.sh TARGET|all EXECS | fuzz/run.sh list" >&2
    echo "targets: ${targets[*]}" >&2
    exit 2
}

[ "${1:-}" = list ] && { printf '%s\n' "${targets[@]}"; exit 0; }
[ $# -eq 2 ] || usage
which=$1 execs=$2
[[ "$execs" =~ ^[0-9]+$ ]] || usage
if [ "$which" = all ]; then
    selected=("${targets[@]}")
else
    [[ " ${targets[*]} " == *" $which "* ]] || usage
    selected=("$which")
fi

command -v cargo-afl >/dev/null || {
    echo "fuzz/run.sh: cargo-afl is not installed (cargo install cargo-afl)" >&2
    exit 2
}

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$repo/fuzz/afl/target}"
out_root="${SIMTAPE_FUZZ_OUT:-$CARGO_TARGET_DIR/fuzz-out}"
(cd fuzz/afl && nice -n 19 cargo afl build --release --locked)
binary="$CARGO_TARGET_DIR/release/simtape-afl"

# No CPU frequency governor check, no core binding (the machine is shared), a core_pattern
# that pipes to a crash reporter is fine, plain-text status instead of the screen UI.
export AFL_SKIP_CPUFREQ=1 AFL_NO_AFFINITY=1 AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1
export AFL_NO_UI=1 AFL_QUIET=1

stat() { awk -F' *: *' -v key="$1" '$1 == key { print $2 }' "$2"; }

printf '%-16s %12s %10s %8s %6s %8s\n' target execs execs/s crashes hangs seconds
for target in "${selected[@]}"; do
    out="$out_root/$target"
    mkdir -p "$out"
    input="$repo/fuzz/corpus/$target"
    # An earlier campaign resumes from its own queue (AFL's `-i -`).
    [ -f "$out/default/fuzzer_stats" ] && input=-
    # -t: a hang is an input that takes 2 s (the slowest seed takes milliseconds).
    limit=()
    [ -n "${SIMTAPE_FUZZ_SECONDS:-}" ] && limit=(-V "$SIMTAPE_FUZZ_SECONDS")
    nice -n 19 cargo afl fuzz -i "$input" -o "$out" -E "$execs" "${limit[@]}" -t 2000 \
        -- "$binary" "$target" > "$out/afl.log" 2>&1 || {
        echo "fuzz/run.sh: afl-fuzz failed on $target; see $out/afl.log" >&2
        tail -20 "$out/afl.log" >&2
        exit 1
    }
    stats="$out/default/fuzzer_stats"
    printf '%-16s %12s %10s %8s %6s %8s\n' "$target" "$(stat execs_done "$stats")" \
        "$(stat execs_per_sec "$stats")" "$(stat saved_crashes "$stats")" \
        "$(stat saved_hangs "$stats")" "$(stat run_time "$stats")"
done
