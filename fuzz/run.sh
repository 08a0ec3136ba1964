#!/bin/sh
# Runs one fuzz target: ./fuzz/run.sh TARGET [libFuzzer options...]
# e.g. ./fuzz/run.sh capture -runs=10000000      (BENCHMARKS.md, "Fuzzing")
# The working corpus grows in fuzz/corpus/TARGET (seeded from fuzz/seeds/TARGET, read-only);
# a crash or a hang (-timeout) stops the run and is saved in fuzz/artifacts/TARGET.
# No sanitizer (the code under test is safe Rust; ASan's allocator cost 4× the executions) and
# no compare tracing (a third of every execution; fuzz/dict/TARGET.dict gives the tokens
# instead). Overflow checks stay on (fuzz/Cargo.toml, profile.release).
set -eu
cd "$(dirname "$0")"
t=$1; shift
mkdir -p corpus/"$t"
exec cargo +nightly fuzz run -O -s none --no-trace-compares "$t" corpus/"$t" seeds/"$t" -- \
    -dict=dict/"$t".dict -timeout=10 -rss_limit_mb=2048 -max_len=2048 -print_final_stats=1 "$@"
