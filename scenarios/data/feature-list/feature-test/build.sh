#!/usr/bin/env bash
# Builds the WASI test runner of scenarios/feature-list.toml into ../feature-test.wasm.
# Needs the wasm32-wasip1 target (`rustup target add wasm32-wasip1`).
set -euo pipefail
cd "$(dirname "$0")"
target="${CARGO_TARGET_DIR:-target}"
cargo build --release --locked --target wasm32-wasip1
cp "$target/wasm32-wasip1/release/feature-test.wasm" ../feature-test.wasm
echo "wrote $(cd .. && pwd)/feature-test.wasm"
