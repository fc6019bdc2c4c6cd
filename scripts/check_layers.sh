#!/usr/bin/env bash
# check_layers.sh - src/ imports only downward (scripts/layers.txt).
#   bash scripts/check_layers.sh SOURCE_DIR [OBJECT_FILE...]
# Checks every #include "dir/..." of src/<dir>/ against the layer table;
# given the library's object files (CTest passes them), also every function
# or variable a directory uses from another: defined in a lower layer, and
# if internal (synor__*), in one its line names. Prints each violation
# (file, what, why) and exits 1 if there is any.
set -euo pipefail
src=$1
shift
table=$src/scripts/layers.txt

declare -A rank allow gen
n=0
while IFS= read -r line; do
  line=${line%%#*}
  [[ $line =~ ^[[:space:]]*$ ]] && continue
  if [[ $line =~ ^generated/([^[:space:]]+)[[:space:]]*=[[:space:]]*([^[:space:]]+) ]]; then
    gen[${BASH_REMATCH[1]}]=${BASH_REMATCH[2]}
    continue
  fi
  dir=${line%%:*}
  dir=${dir//[[:space:]]/}
  rank[$dir]=$n
  allow[$dir]=" ${line#*:} "
  n=$((n + 1))
done <"$table"

bad=0
fail() {
  echo "layers: $*"
  bad=1
}

# Every directory has a line, and names only lower ones.
for d in "$src"/src/*/; do
  d=$(basename "$d")
  [[ -n ${rank[$d]+x} ]] || fail "src/$d is not in scripts/layers.txt (add it above what it uses)"
done
for d in "${!allow[@]}"; do
  read -ra names <<<"${allow[$d]}"
  for a in "${names[@]}"; do
    [[ $a == "*" ]] && continue
    if [[ -z ${rank[$a]+x} || ${rank[$a]} -ge ${rank[$d]} ]]; then
      fail "scripts/layers.txt: $d names $a, which is not listed before it"
    fi
  done
done

layers=$(for d in "${!rank[@]}"; do echo "L $d ${rank[$d]}${allow[$d]}"; done
          for g in "${!gen[@]}"; do echo "G $g ${gen[$g]}"; done)
# The awk programs below read the table first: "L dir rank names..." and
# "G generated-name dir".
table_awk='
  $1 == "L" { rank[$2] = $3; for (i = 4; i <= NF; i++) ok[$2 " " $i] = 1
              if ($4 == "*") top[$2] = 1; next }
  $1 == "G" { gen[$2] = $3; next }'

# Includes of internal headers: "path:line:#include "x/y.h"".
out=$( (echo "$layers"
        cd "$src" && shopt -s nullglob &&
          grep -H -n -o '^[[:space:]]*#[[:space:]]*include[[:space:]]*"[^"]*/[^"]*"' \
            src/*/*.c src/*/*.h src/*/*.cu || true) | awk "$table_awk"'
  {
    split($0, p, ":"); split(p[1], f, "/"); d = f[2]
    inc = $0; sub(/^[^"]*"/, "", inc); sub(/".*/, "", inc)
    x = inc; sub(/\/.*/, "", x)
    if (top[d] || x == d || x == "synor" || ok[d " " x]) next
    print p[1] ":" p[2] ": includes \"" inc "\": " d " may not use the internals of " x
  }')
if [[ -n $out ]]; then
  while IFS= read -r l; do fail "$l"; done <<<"$out"
fi

# Symbols between the object files' directories (nm -A: "file:addr type
# name", or "file: U name" for what a file uses).
if (($#)); then
  out=$( (echo "$layers"; nm -g -A "$@") | awk "$table_awk"'
    function dir_of(f,   m) {
      if (match(f, /\/src\/[^\/]+\/[^\/]+\.o$/)) {
        m = substr(f, RSTART + 5); sub(/\/.*/, "", m); return m
      }
      if (match(f, /\/generated\/[^\/.]+\./)) {
        m = substr(f, RSTART + 11, RLENGTH - 12); return (m in gen) ? gen[m] : ""
      }
      return ""
    }
    {
      file = $1; sub(/:.*/, "", file); d = dir_of(file)
      if (d == "") next
      obj = file; sub(/.*\//, "", obj); sub(/\.o$/, "", obj)
      if ($(NF - 1) == "U") use[++n] = d " " $NF " " obj
      else def[$NF] = d
    }
    END {
      for (i = 1; i <= n; i++) {
        split(use[i], u, " "); d = u[1]; s = u[2]; x = def[s]
        if (x == "" || x == d || top[d]) continue
        if (!(x in rank) || !(d in rank) || rank[x] + 0 >= rank[d] + 0)
          print "src/" d "/" u[3] ": uses " s " of src/" x ", which is not below it"
        else if (s ~ /^synor__/ && !ok[d " " x])
          print "src/" d "/" u[3] ": uses " s ", an internal of src/" x
      }
    }')
  if [[ -n $out ]]; then
    while IFS= read -r l; do fail "$l"; done <<<"$out"
  fi
fi

((bad == 0)) && echo "layers: ok (src/ imports only downward)"
exit $bad
