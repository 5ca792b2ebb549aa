#!/bin/bash
# The installed mdl works away from the build tree: `cmake --install` to a
# prefix, and the .deb that CPack makes (its Depends come from the libraries
# the binaries load). Each is run on an example with the JIT, which must be
# found relative to the binary (lib/mdl/libmdl_jit.so).
#   check_package.sh BUILD_DIR
set -u
build=$(cd "$1" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

check_prefix() { # PREFIX: runs PREFIX/bin/mdl on the installed example
  local prefix=$1 out
  "$prefix/bin/mdl" --version | grep -q "^mdl [0-9.]* (built with LLVM 19" || fail "$prefix/bin/mdl --version"
  out=$(cd "$tmp" && env -u MDL_JIT_LIBRARY "$prefix/bin/mdl" run "$prefix/share/mdl/examples/mlp.mdl" --timings 2>&1) \
    || fail "$prefix/bin/mdl run mlp.mdl: $out"
  echo "$out" | grep -q "^result 1: i64\[2\]" || fail "no results from $prefix/bin/mdl: $out"
  echo "$out" | grep -q "^jit: 2 functions" || fail "the JIT did not run from $prefix: $out"
  test -f "$prefix/share/doc/mdl/README.md" || fail "no README in $prefix/share/doc/mdl"
  test -f "$prefix/share/doc/mdl/diagnostics.md" || fail "no docs in $prefix/share/doc/mdl"
  echo "ok: $prefix/bin/mdl runs the installed example on the JIT"
}

cmake --install "$build" --prefix "$tmp/prefix" > "$tmp/install.log" 2>&1 || fail "cmake --install: $(tail -5 "$tmp/install.log")"
test -f "$tmp/prefix/lib/mdl/libmdl_jit.so" || fail "cmake --install put no lib/mdl/libmdl_jit.so"
check_prefix "$tmp/prefix"

(cd "$build" && cpack -G DEB -B "$tmp/deb" > "$tmp/cpack.log" 2>&1) || fail "cpack: $(tail -5 "$tmp/cpack.log")"
deb=$(ls "$tmp"/deb/mdl_*_amd64.deb 2>/dev/null | head -1)
test -n "$deb" || fail "cpack made no .deb"
depends=$(dpkg-deb -f "$deb" Depends)
echo "Depends: $depends"
for p in libdnnl2 libopenblas0 libzip4 libgomp1 libstdc++6; do
  echo "$depends" | grep -q "\b$p\b" || fail "the .deb does not depend on $p"
done
dpkg-deb -f "$deb" Recommends | grep -q graphviz || fail "the .deb does not recommend graphviz"
dpkg-deb -x "$deb" "$tmp/root" || fail "dpkg-deb -x"
check_prefix "$tmp/root/usr"
echo "ok: $(basename "$deb")"
