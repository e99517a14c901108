#!/bin/sh
# check_symbols.sh LIBXCCL_SO CC INCLUDE_DIR...
#
# libxccl.so exports exactly the public API, versioned (src/xccl.map): each
# dynamic symbol it defines is xcclSomething@@XCCL_0.1 (or the node itself),
# and each function xccl.h declares is among them.
set -eu
me=check_symbols
[ $# -ge 3 ] || { echo "usage: $0 LIBXCCL_SO CC INCLUDE_DIR..." >&2; exit 2; }
lib=$1 cc=$2
shift 2
node=XCCL_0.1
command -v nm >/dev/null || { echo "$me: SKIP: no nm (binutils)"; exit 77; }
syms=$(nm -D --defined-only --with-symbol-versions "$lib" | awk '{ print $3 }')
bad=$(echo "$syms" | grep -v -x -e "$node" -e "xccl[A-Za-z0-9_]*@@$node" || true)
[ -z "$bad" ] || { echo "$me: FAIL: exported without xccl*@@$node:" $bad >&2; exit 1; }
incs=
for d in "$@"; do incs="$incs -I$d"; done
# shellcheck disable=SC2086 # the -I words split on purpose
decls=$(echo '#include <xccl.h>' | "$cc" -E -P $incs - | grep -o '\bxccl[A-Za-z0-9_]* *(' | tr -d ' (' | sort -u)
[ -n "$decls" ] || { echo "$me: FAIL: no function declarations read from xccl.h" >&2; exit 1; }
missing=
for f in $decls; do
  echo "$syms" | grep -q -x "$f@@$node" || missing="$missing $f"
done
[ -z "$missing" ] || { echo "$me: FAIL: declared in xccl.h but not exported as @@$node:$missing" >&2; exit 1; }
echo "$me: ok: $(echo "$syms" | grep -c @@) symbols, all xccl*@@$node; the $(echo "$decls" | wc -l) functions of xccl.h among them"
