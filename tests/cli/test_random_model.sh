#!/usr/bin/env bash
# `hyla random-model` end to end (no Python: the C reader behind `hyla inspect` validates every
# safetensors header, offset and shape, and binds every tensor the forward pass needs):
#  - tiny bf16: the expected files exist; the raw header length keeps the data 8-byte aligned
#    and data follows it; inspect reports the checkpoint complete and consistent (the exact
#    file-size arithmetic is checked by tests/unit/test_safetensors_write.c);
#  - tiny fp8 with a small shard size: shards + index, fp8 scales, quantization_config; inspect OK;
#  - same seed -> byte-identical files, other seed -> different weights;
#  - --config-only for qwen3.5-0.8b and qwen3.6-27b reproduces tests/data/configs byte for byte,
#    and the 27B slice keeps the layer pattern;
#  - usage errors exit 2, refusing to overwrite exits 1, with a one-line message.
set -u
HYLA_BIN=${HYLA_BIN:-build/hyla}
DATA=${HYLA_DATA_DIR:-tests/data}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# little-endian u64 at the start of a file
hdr_len() { od -An -t u8 -N 8 "$1" | tr -d ' '; }

# --- tiny bf16, single file
out=$tmp/tiny
if ! "$HYLA_BIN" random-model --shape tiny --out "$out" --seed 3 >"$tmp/o.txt" 2>"$tmp/e.txt"; then
  fail "tiny bf16 exited non-zero: $(head -1 "$tmp/e.txt")"
fi
for f in config.json generation_config.json model.safetensors; do
  [ -s "$out/$f" ] || fail "tiny bf16: $f missing"
done
[ -e "$out/model.safetensors.index.json" ] && fail "tiny bf16: unexpected index for a single file"
grep -q "124 tensors" "$tmp/o.txt" || fail "tiny bf16: summary: $(cat "$tmp/o.txt")"
if [ -s "$out/model.safetensors" ]; then
  n=$(hdr_len "$out/model.safetensors")
  size=$(stat -c %s "$out/model.safetensors")
  [ $(((8 + n) % 8)) = 0 ] || fail "tiny bf16: header length $n leaves the data unaligned"
  head -c $((8 + n)) "$out/model.safetensors" | tail -c "$n" | grep -q '"__metadata__":{"format":"pt"' ||
    fail "tiny bf16: no __metadata__ format pt"
  [ "$size" -gt $((8 + n)) ] || fail "tiny bf16: no data after the header"
fi
if ! "$HYLA_BIN" inspect "$out" >"$tmp/i.txt" 2>"$tmp/ie.txt"; then
  fail "inspect tiny bf16: $(head -1 "$tmp/ie.txt")"
fi
grep -q "status *OK" "$tmp/i.txt" || fail "inspect tiny bf16 status: $(grep status "$tmp/i.txt")"
grep -q "dtypes *F32 12 (912 B) BF16 112" "$tmp/i.txt" || fail "tiny bf16 dtypes: $(grep dtypes "$tmp/i.txt")"
"$HYLA_BIN" inspect "$out" --json >"$tmp/i.json" 2>/dev/null || fail "inspect --json tiny bf16"

# the special-token ids follow the tiny fixture models (so their tokenizer files fit)
fixture=$DATA/models/tiny-mm/generation_config.json
if [ -f "$fixture" ]; then
  ids() { tr -d ' \n' <"$1" | grep -o '"\(bos\|pad\)_token_id":[0-9]*\|"eos_token_id":\[[0-9,]*\]' | sort; }
  [ "$(ids "$out/generation_config.json")" = "$(ids "$fixture")" ] ||
    fail "tiny token ids $(ids "$out/generation_config.json" | tr '\n' ' ') differ from the fixture's $(ids "$fixture" | tr '\n' ' ')"
fi

# --- determinism
"$HYLA_BIN" random-model --shape tiny --out "$tmp/tiny_again" --seed 3 >/dev/null 2>&1 || fail "tiny again"
cmp -s "$out/model.safetensors" "$tmp/tiny_again/model.safetensors" || fail "same seed gave different files"
cmp -s "$out/config.json" "$tmp/tiny_again/config.json" || fail "same seed gave different config.json"
"$HYLA_BIN" random-model --shape tiny --out "$tmp/tiny_other" --seed 4 >/dev/null 2>&1 || fail "tiny seed 4"
s3=$(tail -c 4096 "$out/model.safetensors" | md5sum)
s4=$(tail -c 4096 "$tmp/tiny_other/model.safetensors" | md5sum)
[ "$s3" != "$s4" ] || fail "seeds 3 and 4 gave the same weights"

# --- tiny fp8, sharded
out8=$tmp/tiny_fp8
if ! "$HYLA_BIN" random-model --shape tiny --out "$out8" --dtype fp8 --max-shard-bytes 100000 >"$tmp/o8.txt" 2>"$tmp/e8.txt"; then
  fail "tiny fp8 exited non-zero: $(head -1 "$tmp/e8.txt")"
fi
[ -s "$out8/model.safetensors.index.json" ] || fail "tiny fp8: no index"
nshards=$(ls "$out8" | grep -c '^model-[0-9]\{5\}-of-[0-9]\{5\}\.safetensors$')
[ "$nshards" -ge 2 ] || fail "tiny fp8: expected several shards, found $nshards"
[ -e "$out8/model.safetensors" ] && fail "tiny fp8: stray model.safetensors next to shards"
for s in "$out8"/model-*.safetensors; do
  n=$(hdr_len "$s")
  [ $(((8 + n) % 8)) = 0 ] || fail "$(basename "$s"): header length $n leaves the data unaligned"
  grep -c "$(basename "$s")" "$out8/model.safetensors.index.json" >/dev/null || fail "$(basename "$s") not in the index"
done
grep -q '"quant_method": "fp8"' "$out8/config.json" || fail "tiny fp8: no quantization_config"
grep -q '"weight_block_size": \[' "$out8/config.json" || fail "tiny fp8: no weight_block_size"
grep -q '"model.language_model.layers.0.linear_attn.in_proj_a"' "$out8/config.json" ||
  fail "tiny fp8: in_proj_a not in modules_to_not_convert"
grep -q 'mlp.down_proj.weight_scale_inv' "$out8/model.safetensors.index.json" || fail "tiny fp8: no scale tensors"
if ! "$HYLA_BIN" inspect "$out8" >"$tmp/i8.txt" 2>"$tmp/ie8.txt"; then
  fail "inspect tiny fp8: $(head -1 "$tmp/ie8.txt")"
fi
grep -q "status *OK" "$tmp/i8.txt" || fail "inspect tiny fp8 status: $(grep status "$tmp/i8.txt")"
grep -q "fp8 scales 57" "$tmp/i8.txt" || fail "tiny fp8: $(grep 'fp8 scales' "$tmp/i8.txt")"

# --- real configs, byte for byte
for shape in qwen3.5-0.8b qwen3.6-27b; do
  "$HYLA_BIN" random-model --shape $shape --out "$tmp/cfg_$shape" --config-only >/dev/null 2>&1 || fail "$shape --config-only"
  cmp -s "$tmp/cfg_$shape/config.json" "$DATA/configs/$shape/config.json" ||
    fail "$shape config.json differs from $DATA/configs/$shape/config.json"
  [ -e "$tmp/cfg_$shape/model.safetensors" ] && fail "$shape --config-only wrote weights"
done
"$HYLA_BIN" random-model --shape qwen3.6-27b-slice:4 --out "$tmp/slice" --config-only >/dev/null 2>&1 || fail "slice:4"
"$HYLA_BIN" inspect "$tmp/slice" >"$tmp/is.txt" 2>/dev/null # exits 1: no weights
grep -q "schedule *GGGA$" "$tmp/is.txt" || fail "slice:4 schedule: $(grep schedule "$tmp/is.txt")"
grep -q "hidden 5120" "$tmp/is.txt" || fail "slice:4 dims: $(grep dims "$tmp/is.txt")"

# --- errors
expect_exit() { # code, stderr pattern, args...
  local code=$1 pat=$2
  shift 2
  "$HYLA_BIN" random-model "$@" >/dev/null 2>"$tmp/err.txt"
  local rc=$?
  [ $rc = "$code" ] || fail "random-model $* exited $rc, expected $code"
  head -1 "$tmp/err.txt" | grep -q -- "$pat" || fail "random-model $*: first stderr line: $(head -1 "$tmp/err.txt")"
}
expect_exit 2 "unknown shape" --shape qwen9 --out "$tmp/x"
expect_exit 2 "layer count 1..64" --shape qwen3.6-27b-slice:0 --out "$tmp/x"
expect_exit 2 "expected bf16 or fp8" --shape tiny --out "$tmp/x" --dtype int4
expect_exit 2 "are required" --shape tiny
expect_exit 2 "unknown argument" --shape tiny --out "$tmp/x" --bogus
expect_exit 2 "positive integer" --shape tiny --out "$tmp/x" --max-shard-bytes 0
expect_exit 2 "non-negative integer" --shape tiny --out "$tmp/x" --seed -3
expect_exit 1 "already exists" --shape tiny --out "$out"
"$HYLA_BIN" random-model --shape tiny --out "$out" --force --seed 3 >/dev/null 2>&1 || fail "--force"
cmp -s "$out/model.safetensors" "$tmp/tiny_again/model.safetensors" || fail "--force rewrite differs"

if [ $fails = 0 ]; then echo "random-model: all checks passed"; fi
exit $((fails > 0))
