#!/usr/bin/env bash
# hyla run -p TEXT: text prompts through the tokenizer (and chat template),
# sampling, streamed text. Tiny model + tiny tokenizer combined in a temp dir.
set -euo pipefail
bin=${HYLA_BIN:-build/hyla}
data=${HYLA_DATA_DIR:-tests/data}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
m="$tmp/tiny"
mkdir -p "$m"
for f in "$data"/models/tiny-text/*; do ln -s "$(cd "$(dirname "$f")" && pwd)/$(basename "$f")" "$m/"; done
for f in "$data"/tokenizers/tiny/*; do [ -e "$m/$(basename "$f")" ] || ln -s "$(cd "$(dirname "$f")" && pwd)/$(basename "$f")" "$m/"; done
fail() { echo "FAIL: $*" >&2; exit 1; }

# greedy is deterministic and generates exactly -n tokens without eos
a=$("$bin" run -m "$m" -p "Hello world" -n 16 --temp 0 --ignore-eos --stats 2>"$tmp/stats")
b=$("$bin" run -m "$m" -p "Hello world" -n 16 --temp 0 --ignore-eos)
[ "$a" = "$b" ] || fail "greedy differs between runs"
grep -q "generated 16 tokens" "$tmp/stats" || fail "stats: $(cat "$tmp/stats")"
# seeded sampling reproduces; another seed differs
s1=$("$bin" run -m "$m" -p "Hello" -n 24 --temp 1 --seed 5 --ignore-eos)
s2=$("$bin" run -m "$m" -p "Hello" -n 24 --temp 1 --seed 5 --ignore-eos)
s3=$("$bin" run -m "$m" -p "Hello" -n 24 --temp 1 --seed 6 --ignore-eos)
[ "$s1" = "$s2" ] || fail "same seed, different text"
[ "$s1" != "$s3" ] || fail "different seeds, same text"
# chat template with and without thinking
"$bin" run -m "$m" -p "Hi" --chat -n 4 --temp 0 --stats 2>"$tmp/c1" >/dev/null
"$bin" run -m "$m" -p "Hi" --chat --no-think -n 4 --temp 0 --stats 2>"$tmp/c2" >/dev/null
p1=$(sed -n 's/^prompt \([0-9]*\) tokens.*/\1/p' "$tmp/c1")
p2=$(sed -n 's/^prompt \([0-9]*\) tokens.*/\1/p' "$tmp/c2")
[ -n "$p1" ] && [ -n "$p2" ] && [ "$p2" -gt "$p1" ] || fail "no-think prompt ($p2) should be longer than thinking prompt ($p1)"
# the weight / kernel options of the token-id mode: q8 with bf16-activation prefill generates the -n tokens
"$bin" run -m "$m" -p "Hello world" -n 8 --temp 0 --ignore-eos --weights q8 --fast-prefill --stats 2>"$tmp/q8" >/dev/null
grep -q "generated 8 tokens" "$tmp/q8" || fail "--weights q8 --fast-prefill: $(cat "$tmp/q8")"
# fp8 weights with bf16-activation decode (--fast-decode) generate the -n tokens too
"$bin" run -m "$m" -p "Hello world" -n 8 --temp 0 --ignore-eos --weights fp8 --fast-decode --stats 2>"$tmp/f8" >/dev/null
grep -q "generated 8 tokens" "$tmp/f8" || fail "--weights fp8 --fast-decode: $(cat "$tmp/f8")"
# usage errors exit 2, runtime errors 1
set +e
"$bin" run -m "$m" -p "x" --weights q3 2>"$tmp/w" >/dev/null; [ $? -eq 2 ] || fail "bad --weights"
grep -q -- "--weights expects" "$tmp/w" || fail "bad --weights message: $(cat "$tmp/w")"
"$bin" run -m "$m" -p "x" --no-think >/dev/null 2>&1; [ $? -eq 2 ] || fail "--no-think without --chat"
"$bin" run -m "$m" -p "x" --temp abc >/dev/null 2>&1; [ $? -eq 2 ] || fail "bad --temp"
"$bin" run -m "$data/models/tiny-text-missing" -p "x" >/dev/null 2>&1; [ $? -eq 1 ] || fail "missing model"
set -e
echo "ok"
