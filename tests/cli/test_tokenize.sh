#!/usr/bin/env bash
# hyla tokenize / detokenize with the real Qwen3.6 tokenizer (decompressed into a temp dir).
set -euo pipefail
: "${HYLA_BIN:?}" "${HYLA_DATA_DIR:?}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
m="$tmp/qwen"
mkdir -p "$m"
zstd -q -dc "$HYLA_DATA_DIR/tokenizers/qwen3.6/tokenizer.json.zst" > "$m/tokenizer.json"
cp "$HYLA_DATA_DIR/tokenizers/qwen3.6/tokenizer_config.json" "$m/"
fail() { echo "FAIL: $*"; exit 1; }

prompt=$'<|im_start|>user\nHi?<|im_end|>\n<|im_start|>assistant\n<think>\n'
got=$("$HYLA_BIN" tokenize -m "$m" --text "$prompt")
[ "$got" = "248045 846 198 12675 30 248046 198 248045 74455 198 248068 198" ] || fail "tokenize: $got"
got=$("$HYLA_BIN" tokenize -m "$m" --comma --text "$prompt")
[ "$got" = "248045,846,198,12675,30,248046,198,248045,74455,198,248068,198" ] || fail "--comma: $got"
got=$(printf '%s' "$prompt" | "$HYLA_BIN" tokenize -m "$m" --file -)
[ "$got" = "248045 846 198 12675 30 248046 198 248045 74455 198 248068 198" ] || fail "stdin: $got"
# --no-special: <|im_end|> stays text, <think> (special: false) is still one token
got=$("$HYLA_BIN" tokenize -m "$m" --no-special --text 'a<|im_end|><think>')
case " $got " in *" 248046 "*) fail "--no-special kept 248046: $got";; esac
case " $got " in *" 248068 "*) ;; *) fail "--no-special lost <think>: $got";; esac
got=$("$HYLA_BIN" tokenize -m "$m" --json --text 'Hi you')
[ "$got" = '{"ids":[12675,488],"tokens":["Hi","Ġyou"]}' ] || fail "--json: $got"
# detokenize prints exactly the text (no added newline), round trip through a file
printf 'x = 1\n\tdef f():  # 你好 😀\n' > "$tmp/in.txt"
ids=$("$HYLA_BIN" tokenize -m "$m" --comma --file "$tmp/in.txt")
"$HYLA_BIN" detokenize -m "$m" --ids "$ids" > "$tmp/out.txt"
cmp "$tmp/in.txt" "$tmp/out.txt" || fail "detokenize round trip"
got=$("$HYLA_BIN" detokenize -m "$m" --skip-special --ids "248045,846,248068,248046")
[ "$got" = "user<think>" ] || fail "--skip-special: $got"
# errors: missing model dir -> 1, usage -> 2
set +e
"$HYLA_BIN" tokenize -m "$tmp/nope" --text x 2>"$tmp/err"; rc=$?
[ $rc = 1 ] && grep -q "tokenizer.json" "$tmp/err" || fail "missing dir rc=$rc $(cat "$tmp/err")"
"$HYLA_BIN" tokenize --text x 2>/dev/null; [ $? = 2 ] || fail "usage rc"
"$HYLA_BIN" detokenize -m "$m" --ids "1,x" 2>/dev/null; [ $? = 2 ] || fail "bad id rc"
echo "cli tokenize/detokenize: ok"
