#!/usr/bin/env bash
# `hyla inspect` end to end:
#  - the tiny seed checkpoint (tests/fuzz/corpus/{config/tiny.json,safetensors/tiny.safetensors})
#    is complete: exit 0, in text and --json form;
#  - every file of tests/data/malformed/config/ (with the valid tiny weights) and of
#    tests/data/malformed/safetensors/ (with the valid tiny config) makes it exit 1 with
#    a one-line error naming the problem as the FIRST line of stderr, never a crash
#    (exit >= 128) and never sanitizer output;
#  - the Qwen3.6-27B config (no weights) reports the spec §1.4 numbers and exits non-zero;
#  - every fixture model under tests/data/models/ (if any) inspects clean.
set -u
HYLA_BIN=${HYLA_BIN:-build/hyla}
DATA=${HYLA_DATA_DIR:-tests/data}
ROOT=$(cd "$DATA/../.." && pwd)
SEED_CFG=$ROOT/tests/fuzz/corpus/config/tiny.json
SEED_ST=$ROOT/tests/fuzz/corpus/safetensors/tiny.safetensors
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# What the first stderr line must contain, per malformed file.
declare -A want=(
  [config/array_root.json]="expected a JSON object at the top level"
  [config/bool_as_string.json]="tie_word_embeddings: expected true or false"
  [config/deep_nesting.json]="maximum parsing depth"
  [config/duplicate_keys.json]="duplicate object key"
  [config/empty.json]="config.json: line 1"
  [config/eos_bad_list.json]="text_config.eos_token_id[1]"
  [config/float_for_int.json]="text_config.head_dim: expected an integer"
  [config/heads_not_multiple.json]="num_attention_heads: 3 is not a multiple of num_key_value_heads (2)"
  [config/huge_integer.json]="too big integer"
  [config/huge_sizes.json]="text_config.hidden_size: 1000000000000000 is out of range"
  [config/invalid_utf8.json]="unable to decode byte"
  [config/layer_types_length.json]="text_config.layer_types: has 1 entries but num_hidden_layers is 2"
  [config/layer_types_unknown.json]="text_config.layer_types[1]"
  [config/missing_model_type.json]="model_type: missing"
  [config/nan.json]="invalid token"
  [config/negative_hidden_size.json]="text_config.hidden_size: must be a positive integer"
  [config/nul_in_string.json]="config.json: line"
  [config/partial_rotary_odd.json]="partial_rotary_factor"
  [config/partial_rotary_zero.json]="partial_rotary_factor: 0 is outside (0, 1]"
  [config/quant_unsupported.json]="quantization_config.quant_method"
  [config/rope_yarn.json]="rope_type: \"yarn\" is not supported"
  [config/text_config_not_object.json]="text_config: expected an object"
  [config/trailing_garbage.json]="end of file expected"
  [config/truncated.json]="premature end of input"
  [config/unknown_model_type.json]="model_type: \"qwen3_next\" is not supported (supported: qwen3_5, qwen3_5_text)"
  [config/value_heads_not_multiple.json]="linear_num_value_heads: 3 is not a multiple of linear_num_key_heads (2)"
  [config/wrong_type.json]="text_config.intermediate_size: expected an integer, found string"
  [config/zero_layers.json]="text_config.num_hidden_layers: must be a positive integer"
  [safetensors/bad_weight_dtype.safetensors]="bad dtype model.language_model.layers.0.linear_attn.A_log"
  [safetensors/deep_nesting.safetensors]="maximum parsing depth"
  [safetensors/duplicate_keys.safetensors]="duplicate object key"
  [safetensors/empty.safetensors]="file is 0 bytes"
  [safetensors/end_before_begin.safetensors]="end is before begin"
  [safetensors/entry_not_object.safetensors]="tensor \"t\": expected an object"
  [safetensors/header_length_past_eof.safetensors]="header length 4096 runs past the end of the file"
  [safetensors/header_length_zero.safetensors]="header length 0 is too small"
  [safetensors/huge_header_length.safetensors]="is more than the 100 MiB allowed"
  [safetensors/invalid_utf8.safetensors]="unable to decode byte"
  [safetensors/metadata_not_string.safetensors]="__metadata__.total: expected a string"
  [safetensors/misshaped_tensor.safetensors]="in_proj_qkv.weight (expected shape [16, 8], found [8, 16])"
  [safetensors/missing_tensor.safetensors]="missing model.language_model.layers.0.linear_attn.in_proj_z.weight"
  [safetensors/nan.safetensors]="invalid token"
  [safetensors/negative_shape.safetensors]="shape[0] is negative"
  [safetensors/non_object_root.safetensors]="header: expected a JSON object"
  [safetensors/nul_padding.safetensors]="header: line 1"
  [safetensors/offsets_not_ints.safetensors]="data_offsets: expected two non-negative integers"
  [safetensors/offsets_past_eof.safetensors]="run past the end of the data"
  [safetensors/overlapping.safetensors]="overlap"
  [safetensors/shape_overflow.safetensors]="element count overflows"
  [safetensors/too_many_dims.safetensors]="9 dimensions"
  [safetensors/truncated_data.safetensors]="run past the end of the data"
  [safetensors/truncated_header.safetensors]="runs past the end of the file"
  [safetensors/truncated_length.safetensors]="too short for the 8-byte header length"
  [safetensors/unexpected_tensor.safetensors]="unexpected model.language_model.layers.0.bogus"
  [safetensors/unknown_dtype.safetensors]="dtype \"F4\" is unknown"
  [safetensors/wrong_dtype_size.safetensors]="needs 8"
)

# run DIR [args]: sets rc, out, err
run() {
  "$HYLA_BIN" inspect "$@" >"$tmp/out" 2>"$tmp/err"
  rc=$?
}

check_failure() { # label expected-substring
  local label=$1 expect=$2 first
  first=$(head -n 1 "$tmp/err")
  if [ "$rc" -ge 128 ]; then fail "$label: crashed (exit $rc)"; sed 's/^/    /' "$tmp/err" | head -20; return; fi
  if [ "$rc" -eq 0 ]; then fail "$label: exit 0"; return; fi
  if grep -qE 'AddressSanitizer|runtime error|LeakSanitizer' "$tmp/err"; then fail "$label: sanitizer report"; head -20 "$tmp/err"; return; fi
  case "$first" in "hyla inspect: "*) ;; *) fail "$label: first stderr line is not the error: '$first'"; return ;; esac
  if [ -n "$expect" ] && [[ "$first" != *"$expect"* ]]; then fail "$label: '$first' does not mention '$expect'"; fi
}

# 1. the valid seed checkpoint
mkdir -p "$tmp/ok"
cp "$SEED_CFG" "$tmp/ok/config.json"
cp "$SEED_ST" "$tmp/ok/model.safetensors"
run "$tmp/ok"
[ "$rc" -eq 0 ] || { fail "valid tiny checkpoint: exit $rc"; cat "$tmp/err"; }
grep -q "status .*OK" "$tmp/out" || fail "valid tiny checkpoint: no OK status"
[ -s "$tmp/err" ] && fail "valid tiny checkpoint: stderr not empty: $(head -1 "$tmp/err")"
run "$tmp/ok" --json
[ "$rc" -eq 0 ] || fail "valid tiny checkpoint --json: exit $rc"
grep -q '"ok": true' "$tmp/out" || fail "--json: no \"ok\": true"
grep -q '"text_params": 1272' "$tmp/out" || fail "--json: tiny text_params"

# 2. malformed files
n=0
for kind in config safetensors; do
  for f in "$ROOT/tests/data/malformed/$kind"/*; do
    [ -f "$f" ] || continue
    name=$kind/$(basename "$f")
    d=$tmp/case
    rm -rf "$d"; mkdir -p "$d"
    if [ "$kind" = config ]; then cp "$f" "$d/config.json"; cp "$SEED_ST" "$d/model.safetensors"
    else cp "$SEED_CFG" "$d/config.json"; cp "$f" "$d/model.safetensors"; fi
    [ -n "${want[$name]+x}" ] || fail "$name: no expectation in test_inspect.sh (add one)"
    run "$d"
    check_failure "$name" "${want[$name]-}"
    run "$d" --json
    check_failure "$name (--json)" "${want[$name]-}"
    n=$((n + 1))
  done
done
echo "malformed inputs checked: $n"

# 3. missing config / usage
mkdir -p "$tmp/empty"
run "$tmp/empty"; check_failure "dir without config.json" "config.json: No such file"
"$HYLA_BIN" inspect >/dev/null 2>&1; [ $? -eq 2 ] || fail "no argument: exit should be 2"

# 4. Qwen3.6-27B config (no weights): spec §1.4 numbers
run "$DATA/configs/qwen3.6-27b"
check_failure "qwen3.6-27b" "no weights"
grep -q "text parameters *26,895,998,464 (26.90 B" "$tmp/out" || fail "27B: text parameters"
grep -q "MTP parameters *424,699,392" "$tmp/out" || fail "27B: MTP parameters"
grep -q "KV cache per token *65,536 B (64 KiB) bf16" "$tmp/out" || fail "27B: KV bytes"
grep -q "GDN state per seq *150,994,944 B (144 MiB) fp32" "$tmp/out" || fail "27B: GDN state"
grep -q "\[3 G + 1 A\] x 16" "$tmp/out" || fail "27B: schedule"
grep -q "missing *851" "$tmp/out" || fail "27B: 851 missing tensors"
run "$DATA/configs/qwen3.6-27b" --json
grep -q '"text_params": 26895998464' "$tmp/out" || fail "27B --json: text_params"
grep -q '"gdn_state_bytes_per_seq_fp32": 150994944' "$tmp/out" || fail "27B --json: gdn state"
run "$DATA/configs/qwen3.5-0.8b"
grep -q "text parameters *752,393,024" "$tmp/out" || fail "0.8B: text parameters"

# 5. fixture models, when present
for d in "$DATA"/models/*/; do
  [ -f "$d/config.json" ] || continue
  run "$d"
  [ "$rc" -eq 0 ] || fail "fixture $d: exit $rc: $(head -1 "$tmp/err")"
done

[ "$fails" -eq 0 ] && echo "test_inspect: all passed" || echo "test_inspect: $fails failure(s)"
[ "$fails" -eq 0 ]
