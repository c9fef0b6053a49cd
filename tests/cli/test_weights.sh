#!/usr/bin/env bash
# Load-time weight formats through the CLI (model/linears.h):
#  - an official-layout fp8 checkpoint (hyla random-model --dtype fp8) runs in place with
#    `hyla logits`, on every kernel tier, and with --weights bf16 | q8 | q4;
#  - `hyla inspect --weights X` prints the per-class byte table (text and --json), the selective
#    default keeps lm_head and in_proj_a/b as stored, --quantize-lm-head converts lm_head;
#  - `hyla run --weights q4 --stats` names the kernels and formats;
#  - bad values exit 2 with a one-line message.
set -u
HYLA_BIN=${HYLA_BIN:-build/hyla}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

"$HYLA_BIN" random-model --shape tiny --dtype fp8 --out "$tmp/fp8" >/dev/null 2>"$tmp/e.txt" ||
  fail "random-model fp8: $(head -1 "$tmp/e.txt")"

for isa in ref avx2 avx512 auto; do
  if "$HYLA_BIN" logits -m "$tmp/fp8" --ids 1,2,3,4,5,6,7,8,9,10 --isa $isa >"$tmp/o.txt" 2>"$tmp/e.txt"; then
    grep -q "^argmax " "$tmp/o.txt" || fail "logits fp8 --isa $isa: $(cat "$tmp/o.txt")"
  elif ! grep -q "not supported by this CPU" "$tmp/e.txt"; then
    fail "logits fp8 --isa $isa: $(head -1 "$tmp/e.txt")"
  fi
done
for w in auto bf16 fp8 q8 q4; do
  "$HYLA_BIN" logits -m "$tmp/fp8" --ids 1,2,3,4,5,6,7,8,9,10 --all --weights $w --out "$tmp/l_$w.bin" >/dev/null \
    2>"$tmp/e.txt" || fail "logits --weights $w: $(head -1 "$tmp/e.txt")"
  [ "$(stat -c %s "$tmp/l_$w.bin" 2>/dev/null)" = $((10 * 512 * 4)) ] || fail "logits --weights $w: output size"
done
cmp -s "$tmp/l_auto.bin" "$tmp/l_fp8.bin" || fail "--weights fp8 on an fp8 checkpoint should keep it as stored"

# matrices used as stored (all of them in place for fp8 auto; lm_head and in_proj_a/b with q8)
# give the same logits read from the mmap or copied into memory: bit for bit where the copy keeps
# the layout (the ref tier), within rounding where the tier copies bf16 into row groups and sums
# them in its own order (avx2: kernels/matmul.h, HY_WFMT_BF16G): 1e-4, and 1e-2 for q8, whose
# int8 activations turn a last-bit difference on a rounding edge into a whole step (measured 3e-4)
for w in auto q8; do
  tol=1e-4
  [ $w = q8 ] && tol=1e-2
  for isa in ref auto; do
    for r in mmap no-mmap default; do
      flag=--$r
      [ $r = default ] && flag=
      "$HYLA_BIN" logits -m "$tmp/fp8" --ids 1,2,3,4,5,6,7,8,9,10 --all --weights $w --isa $isa $flag \
        --out "$tmp/r_${w}_${isa}_$r.bin" >/dev/null 2>"$tmp/e.txt" || fail "logits --weights $w --isa $isa $flag: $(head -1 "$tmp/e.txt")"
    done
  done
  cmp -s "$tmp/r_${w}_ref_mmap.bin" "$tmp/r_${w}_ref_default.bin" || fail "--weights $w --isa ref --mmap: logits differ from the default"
  cmp -s "$tmp/r_${w}_ref_no-mmap.bin" "$tmp/r_${w}_ref_default.bin" || fail "--weights $w --isa ref --no-mmap: logits differ from the default"
  cmp -s "$tmp/r_${w}_auto_no-mmap.bin" "$tmp/r_${w}_auto_default.bin" || fail "--weights $w --no-mmap: logits differ from the default"
  python3 - "$tmp/r_${w}_auto_mmap.bin" "$tmp/r_${w}_auto_default.bin" $tol <<'PY' || fail "--weights $w --mmap: logits differ from the default by more than $tol"
import struct, sys
a, b = (open(f, "rb").read() for f in sys.argv[1:3])
assert len(a) == len(b)
n = len(a) // 4
x, y = struct.unpack(f"{n}f", a), struct.unpack(f"{n}f", b)
sys.exit(0 if max(abs(p - q) for p, q in zip(x, y)) <= float(sys.argv[3]) else 1)
PY
done

"$HYLA_BIN" inspect "$tmp/fp8" --weights q8 >"$tmp/i.txt" 2>"$tmp/e.txt" || fail "inspect --weights q8: $(head -1 "$tmp/e.txt")"
grep -q "^weights as used (--weights q8, kernels " "$tmp/i.txt" || fail "inspect --weights q8: no table"
grep -Eq "^  mlp gate/up/down +24 .* q8$" "$tmp/i.txt" || fail "inspect: mlp not q8: $(grep mlp "$tmp/i.txt")"
grep -Eq "^  lm_head .* bf16g?$" "$tmp/i.txt" || fail "inspect: lm_head should stay bf16 by default"
grep -Eq "^  gdn in_proj_a/b .* bf16g?$" "$tmp/i.txt" || fail "inspect: in_proj_a/b should stay bf16 by default"
"$HYLA_BIN" inspect "$tmp/fp8" --weights q4 --quantize-lm-head >"$tmp/i.txt" 2>&1
grep -Eq "^  lm_head .* q4$" "$tmp/i.txt" || fail "inspect --quantize-lm-head: $(grep lm_head "$tmp/i.txt")"
"$HYLA_BIN" inspect "$tmp/fp8" --weights auto --isa ref --json >"$tmp/i.json" 2>&1 || fail "inspect --json --weights auto"
grep -q '"weights_plan"' "$tmp/i.json" || fail "inspect --json: no weights_plan"
grep -q '"format": "fp8"' "$tmp/i.json" || fail "inspect --json: fp8 classes missing"
# the avx2 tier holds the matrices in row groups, and the table says so
if "$HYLA_BIN" inspect "$tmp/fp8" --weights auto --isa avx2 >"$tmp/i.txt" 2>/dev/null; then
  grep -q "kernels avx2)" "$tmp/i.txt" || fail "inspect --isa avx2: tier not named"
  grep -Eq "^  mlp gate/up/down .* fp8g$" "$tmp/i.txt" || fail "inspect --isa avx2: mlp not fp8g: $(grep mlp "$tmp/i.txt")"
fi

"$HYLA_BIN" run -m "$tmp/fp8" --ids 1,2,3 -n 3 --weights q4 --stats >/dev/null 2>"$tmp/e.txt" ||
  fail "run --weights q4: $(head -1 "$tmp/e.txt")"
grep -q "weights q4" "$tmp/e.txt" || fail "run --stats does not name the weights: $(cat "$tmp/e.txt")"

"$HYLA_BIN" logits -m "$tmp/fp8" --ids 1 --weights q3 >/dev/null 2>"$tmp/e.txt"
[ $? = 2 ] || fail "--weights q3 should exit 2"
grep -q "expects auto, bf16, fp8, q8 or q4" "$tmp/e.txt" || fail "--weights q3 message: $(cat "$tmp/e.txt")"
"$HYLA_BIN" logits -m "$tmp/fp8" --ids 1 --isa sse9 >/dev/null 2>"$tmp/e.txt"
[ $? = 1 ] || fail "--isa sse9 should fail"
grep -q "unknown instruction set" "$tmp/e.txt" || fail "--isa sse9 message: $(cat "$tmp/e.txt")"

if [ $fails -ne 0 ]; then echo "$fails failure(s)"; exit 1; fi
echo "weights CLI: all checks passed"
