# Shell functions shared by scripts/run-bench and scripts/bench-llamacpp (sourced, not run).
# They read the caller's $hyla (the binary), $models (the bench-models directory) and $tmp.

# ensure_model SHAPE DTYPE [MAXPOS] -> prints the directory; generates it once.
ensure_model() {
  local shape=$1 dtype=$2 maxpos=${3:-} dir
  dir=$models/${shape//:/-}-$dtype${maxpos:+-pos$maxpos}
  if [ ! -f "$dir/.complete" ]; then
    echo "   generating $dir (once) ..." >&2
    "$hyla" random-model --shape "$shape" --dtype "$dtype" --out "$dir" --force >"$tmp/gen.log" 2>&1 ||
      { cat "$tmp/gen.log" >&2; return 1; }
    if [ -n "$maxpos" ]; then
      sed -i -E "s/(\"max_position_embeddings\": *)[0-9]+/\1$maxpos/" "$dir/config.json"
      grep -q "\"max_position_embeddings\": *$maxpos" "$dir/config.json" ||
        { echo "${0##*/}: could not set max_position_embeddings in $dir/config.json" >&2; return 1; }
    fi
    touch "$dir/.complete"
  fi
  echo "$dir"
}

# csv_field FILE TEST COLUMN -> value of COLUMN in the row whose first field is TEST
csv_field() {
  awk -F, -v t="$2" -v c="$3" '
    /^#/ { next }
    !hdr { for (i = 1; i <= NF; i++) col[$i] = i; hdr = 1; next }
    $1 == t { print $(col[c]); exit }' "$1"
}
