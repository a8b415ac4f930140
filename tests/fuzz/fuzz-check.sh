#!/bin/sh
# make check: replay the fuzz seed corpus, then fuzz briefly (SKIP without clang/libFuzzer).
exec timeout 300 "${srcdir:-$(dirname "$0")/..}/fuzz/run-fuzz" --check "${FUZZ_CHECK_SECONDS:-20}"
