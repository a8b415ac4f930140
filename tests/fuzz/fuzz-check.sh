#!/bin/sh
# make check: replay the fuzz seed corpus, then fuzz briefly (SKIP without clang/libFuzzer).
# the bound is for a hang: building with sanitizers is slow on a loaded machine
exec timeout 900 "${srcdir:-$(dirname "$0")/..}/fuzz/run-fuzz" --check "${FUZZ_CHECK_SECONDS:-20}"
