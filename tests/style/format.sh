#!/bin/bash
# Every C source and header of the tree follows .clang-format (clang-format
# 14, Debian 12's): the style check CI runs with the rest of make check.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
command -v clang-format >/dev/null || { echo "SKIP: clang-format not installed"; exit 77; }
git -C "$top" rev-parse --git-dir >/dev/null 2>&1 || { echo "SKIP: not a git checkout (no file list)"; exit 77; }
bad=()
while IFS= read -r f; do
	clang-format --style=file --dry-run -Werror "$top/$f" >/dev/null 2>&1 || bad+=("$f")
done < <(git -C "$top" ls-files '*.c' '*.h')
if [ ${#bad[@]} -gt 0 ]; then
	echo "FAIL: ${#bad[@]} file(s) differ from .clang-format (fix: clang-format -i FILE):"
	printf '  %s\n' "${bad[@]}"
	exit 1
fi
echo "ok: every C file follows .clang-format"
