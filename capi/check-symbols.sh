#!/usr/bin/env bash
# check-symbols.sh LIB HEADER: the library's dynamic symbol table must hold exactly the
# functions the header declares: every kylix_* prototype present, nothing else (no Go runtime,
# no cgo helpers, no kylixgo_*). Run by `make` after building libkylix.so.
set -euo pipefail
lib=$1 hdr=$2
want=$(grep -E '^(int|const char) +\*?kylix_[a-z_]+\(' "$hdr" | sed -E 's/^.*(kylix_[a-z_]+)\(.*/\1/' | sort -u)
have=$(nm -D --defined-only "$lib" | awk '{print $NF}' | sed 's/@.*//' | sort -u)
if [ "$want" != "$have" ]; then
  echo "check-symbols: $lib exports differ from $hdr (< header only, > library only):" >&2
  diff <(echo "$want") <(echo "$have") >&2 || true
  exit 1
fi
echo "check-symbols: $lib exports exactly the $(echo "$want" | wc -l) functions of $hdr"
