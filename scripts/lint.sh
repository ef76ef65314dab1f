#!/usr/bin/env bash
# Style checks: clang-format over every C++ file (.clang-format), and clang-tidy (.clang-tidy)
# over the C++ source files a change touches: those changed since BASE (default: the parent of
# HEAD, so a clean clone checks its last commit). Needs a configured release build for the
# compile commands (scripts/test.sh makes one).
#   scripts/lint.sh [BASE]
set -euo pipefail
cd "$(dirname "$0")/.."
base=${1:-HEAD~1}
mapfile -t all < <(git ls-files '*.cc' '*.h' '*.hpp' | grep -v '^include/ocp/')
echo "lint: clang-format over ${#all[@]} files"
if ! clang-format --dry-run --Werror "${all[@]}" 2>/tmp/mrc-format.$$; then
  grep -m 20 "error:" /tmp/mrc-format.$$ >&2 || true
  rm -f /tmp/mrc-format.$$
  echo "lint: files differ from .clang-format: run clang-format -i on them" >&2
  exit 1
fi
rm -f /tmp/mrc-format.$$
db=build/release/compile_commands.json
[ -f "$db" ] || { echo "lint: $db is missing: configure the release preset first (cmake --preset release)" >&2; exit 1; }
if ! git rev-parse --verify -q "$base" >/dev/null; then
  echo "lint: no $base to compare with: clang-tidy skipped"
  exit 0
fi
mapfile -t touched < <(git diff --name-only --diff-filter=AMR "$base" -- '*.cc' | grep -E '^(src|tests|bench|tools)/' | grep -v '^src/pytorch/' || true)
# Only what this build compiles has compile commands: an optional target whose library is not
# installed here (bench/uring_receive without liburing-dev) is named and left out.
changed=()
for f in "${touched[@]}"; do
  if grep -qF "/$f\"" "$db"; then changed+=("$f"); else echo "lint: $f is not built here: clang-tidy skips it"; fi
done
if [ ${#changed[@]} -eq 0 ]; then
  echo "lint: no C++ source file changed since $base: clang-tidy has nothing to check"
  exit 0
fi
echo "lint: clang-tidy over ${#changed[@]} files changed since $base"
# The compile commands are GCC's: clang-tidy ignores the flags it does not know, and the GNU
# extensions of libbpf's macros that -Wpedantic reports under clang.
clang-tidy -p build/release --quiet --extra-arg=-Wno-unknown-warning-option \
  --extra-arg=-Wno-ignored-optimization-argument --extra-arg=-Wno-gnu-statement-expression \
  --extra-arg=-Wno-c99-extensions "${changed[@]}"
