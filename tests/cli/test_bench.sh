#!/usr/bin/env bash
# `hyla bench` end to end on a tiny fixture (a few tokens, one rep: seconds). Checks the table
# and csv come out with every test row, a finite-logits verdict and the memory line, at a depth
# too (the depth state is restored before every rep), and that bad options exit 2 with a
# message. Timings are never checked.
set -u
HYLA_BIN=${HYLA_BIN:-build/hyla}
DATA=${HYLA_DATA_DIR:-tests/data}
M=$DATA/models/tiny-text
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

if ! "$HYLA_BIN" bench -m "$M" -p 16,40 -n 4 -d 0,70 -r 2 -t 2 --bw-mib 64 >"$tmp/md.txt" 2>"$tmp/e.txt"; then
  fail "md run exited non-zero: $(tail -1 "$tmp/e.txt")"
fi
for t in "pp16 " "pp40 " "tg4 " "pp16 @ d70" "pp40 @ d70" "tg4 @ d70"; do
  grep -q "| $t" "$tmp/md.txt" || fail "md: no row '$t'"
done
grep -q "logits: all finite" "$tmp/md.txt" || fail "md: no finite-logits verdict"
grep -q "^memory: context" "$tmp/md.txt" || fail "md: no memory line"
grep -q "%BW" "$tmp/md.txt" || fail "md: no %BW column"

if ! "$HYLA_BIN" bench -m "$M" -p 8 -n 3 -r 1 --bw-mib 0 --isa ref -o csv >"$tmp/c.csv" 2>"$tmp/e.txt"; then
  fail "csv run exited non-zero: $(tail -1 "$tmp/e.txt")"
fi
grep -q '^test,depth,tokens,reps,tps,' "$tmp/c.csv" || fail "csv: no header"
grep -q '^pp8,0,8,1,' "$tmp/c.csv" || fail "csv: no pp8 row"
grep -q '^tg3,0,3,1,' "$tmp/c.csv" || fail "csv: no tg3 row"
grep -q '^# logits: finite' "$tmp/c.csv" || fail "csv: no finite verdict"
grep -q '^# kernels: ref ' "$tmp/c.csv" || fail "csv: --isa ref not applied"

# --interleave: the same rows, each with all its repetitions
if ! "$HYLA_BIN" bench -m "$M" -p 8,24 -n 3 -r 2 --bw-mib 0 --interleave -o csv >"$tmp/i.csv" 2>"$tmp/e.txt"; then
  fail "interleaved run exited non-zero: $(tail -1 "$tmp/e.txt")"
fi
for t in pp8,0,8,2, pp24,0,24,2, tg3,0,3,2,; do
  grep -q "^$t" "$tmp/i.csv" || fail "interleave: no row '$t'"
done

# --profile: a decode profile after the tg row (md: a table ending in the step row; csv: one
# "# profile" line per phase, lm_head among them)
if ! "$HYLA_BIN" bench -m "$M" -p 0 -n 3 -r 2 -t 2 --bw-mib 0 --profile >"$tmp/p.txt" 2>"$tmp/e.txt"; then
  fail "profile run exited non-zero: $(tail -1 "$tmp/e.txt")"
fi
grep -q "^decode profile, tg3 (6 tokens, 2 threads" "$tmp/p.txt" || fail "profile: no table header"
for ph in "in_proj_qkv" "gdn core" "attention" "lm_head" "barrier wait" "step"; do
  grep -q "^| $ph " "$tmp/p.txt" || fail "profile: no row '$ph'"
done
"$HYLA_BIN" bench -m "$M" -p 0 -n 3 -r 1 --bw-mib 0 --profile -o csv >"$tmp/p.csv" 2>"$tmp/e.txt" ||
  fail "profile csv run exited non-zero: $(tail -1 "$tmp/e.txt")"
grep -q "^# profile,tg3,lm_head," "$tmp/p.csv" || fail "profile csv: no lm_head line"

# --fast-decode: the header says so, the tg row is there, the logits stay finite
"$HYLA_BIN" bench -m "$M" -p 0 -n 3 -r 1 --bw-mib 0 --weights fp8 --fast-decode >"$tmp/fd.txt" 2>"$tmp/e.txt" ||
  fail "--fast-decode run exited non-zero: $(tail -1 "$tmp/e.txt")"
grep -q "fast decode" "$tmp/fd.txt" || fail "--fast-decode: not in the header"
grep -q "tg3" "$tmp/fd.txt" || fail "--fast-decode: no tg row"
grep -q "logits: all finite" "$tmp/fd.txt" "$tmp/e.txt" || fail "--fast-decode: logits not finite"

# the lm_head / GDN a,b selection flags in run's spelling and in bench's earlier short one: both
# take lm_head into q8, so a token streams fewer weight bytes (csv column 9) than without
wbytes() { "$HYLA_BIN" bench -m "$M" -p 0 -n 2 -r 1 --bw-mib 0 --weights q8 -o csv "$@" 2>"$tmp/e.txt" | awk -F, '/^tg2,/{print $9}'; }
w0=$(wbytes); w1=$(wbytes --quantize-lm-head --quantize-gdn-ab); w2=$(wbytes --quant-lm-head --quant-gdn-ab)
[ -n "$w0" ] && [ -n "$w1" ] && [ "$w1" -lt "$w0" ] || fail "--quantize-lm-head: weight bytes $w1 not below $w0"
[ "$w1" = "$w2" ] || fail "--quant-lm-head: weight bytes $w2, expected $w1 as --quantize-lm-head"

expect_usage() { # args... : exit 2 and a message on stderr
  "$HYLA_BIN" bench "$@" >/dev/null 2>"$tmp/u.txt"
  rc=$?
  [ $rc = 2 ] || fail "bench $*: exit $rc, expected 2"
  [ -s "$tmp/u.txt" ] || fail "bench $*: no message"
}
expect_usage -p 8
expect_usage -m "$M" --weights q5
expect_usage -m "$M" -p 1,x
expect_usage -m "$M" -r 0
expect_usage -m "$M" -o json
"$HYLA_BIN" bench -m "$DATA/models/does-not-exist" -p 4 -n 0 -r 1 --bw-mib 0 >/dev/null 2>"$tmp/u.txt"
[ $? = 1 ] || fail "missing model: expected exit 1"
"$HYLA_BIN" bench -m "$M" -p 4 -n 0 -r 1 --bw-mib 0 --isa sse9 >/dev/null 2>"$tmp/u.txt"
[ $? = 1 ] && grep -q "sse9" "$tmp/u.txt" || fail "bad --isa: expected exit 1 naming it"

[ $fails = 0 ] && echo "test_bench: all checks passed"
exit $((fails > 0))
