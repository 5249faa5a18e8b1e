#!/bin/sh
# expect_error.sh STATUS PATTERN COMMAND [ARGS...]: passes when COMMAND exits with STATUS and its output has a line
# matching PATTERN (grep -E), the one clear error a command line's bad input must get.
status=$1 pattern=$2
shift 2
out=$("$@" 2>&1)
got=$?
printf '%s\n' "$out"
[ "$got" -eq "$status" ] || { echo "expect_error: exit status $got, expected $status"; exit 1; }
printf '%s\n' "$out" | grep -Eq -- "$pattern" || { echo "expect_error: no line matches '$pattern'"; exit 1; }
