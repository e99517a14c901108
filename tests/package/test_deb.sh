#!/usr/bin/env bash
# test_deb.sh BUILD_DIR SOURCE_DIR
#
# The Debian packages as an apt user gets them:
#   1. cpack -G DEB in BUILD_DIR: libxccl0, libxccl-dev, xccl-tools,
#      libnccl2-xccl (cmake/package.cmake), into BUILD_DIR/packages;
#   2. a clean Debian root of this machine's release (debootstrap, minbase,
#      the mirror of this machine's apt sources) with gcc, cmake and
#      pkg-config and the run-time libraries the packages' Depends name, in
#      one debootstrap pass; kept in BUILD_DIR/package-root/<key> and copied
#      for each run;
#   3. apt-get install of the four .debs into the copy (apt fetches the -dev
#      packages libxccl-dev depends on);
#   4. in the root, tests/package/consumer/allreduce.c built against the
#      installed files (a) with pkg-config, (b) with find_package(xccl), each
#      run by the installed xccl-run with 2 ranks (shared memory, then
#      sockets over loopback), summing right; an NCCL program
#      (tests/install/consumer/nccl_main.c) built with -lnccl against
#      libnccl2-xccl and run.
# Each phase's seconds are printed. Exit 0 pass, 77 skipped (not root, no
# debootstrap or dpkg-shlibdeps, no archive), anything else a failure.
# XCCL_KEEP_TMP=1 keeps the root of this run.
set -euo pipefail

me=package_deb
SKIP=77
say() { printf '%s: %s\n' "$me" "$*"; }
fail() {
  printf '%s: FAIL: %s\n' "$me" "$*" >&2
  exit 1
}
skip() {
  say "SKIP: $*"
  exit $SKIP
}
t0=$(date +%s)
phase_t=$t0
phase() {
  local t
  t=$(date +%s)
  say "phase $1 took $((t - phase_t)) s"
  phase_t=$t
}

[ $# -eq 2 ] || {
  echo "usage: $0 BUILD_DIR SOURCE_DIR" >&2
  exit 2
}
build=$(cd "$1" && pwd -P)
src=$(cd "$2" && pwd -P)

# ---- can it run here? -------------------------------------------------------
[ "$(id -u)" -eq 0 ] || skip "needs root (debootstrap, chroot, mount)"
command -v debootstrap >/dev/null || skip "no debootstrap (Debian: apt-get install debootstrap; scripts/deps.sh installs it)"
command -v dpkg-shlibdeps >/dev/null || skip "no dpkg-shlibdeps (Debian: apt-get install dpkg-dev)"
command -v cpack >/dev/null || skip "no cpack"
[ -r /etc/os-release ] || skip "no /etc/os-release: not a Debian machine"
suite=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
distro=$(. /etc/os-release && echo "${ID:-}")
[ "$distro" = debian ] && [ -n "$suite" ] || skip "not Debian (ID=$distro): the root is made of Debian's archive"

# The mirror this machine's apt uses for $suite: deb822 .sources first (the
# Debian 12+ layout), then one-line sources.list entries.
mirror=
for f in /etc/apt/sources.list.d/*.sources; do
  [ -r "$f" ] || continue
  mirror=$(awk -v suite="$suite" '
    /^[ \t]*$/ { if (uri != "" && ok) { print uri; exit } uri = ""; ok = 0; next }
    tolower($1) == "uris:" { uri = $2 }
    tolower($1) == "suites:" { for (i = 2; i <= NF; i++) if ($i == suite) ok = 1 }
    END { if (uri != "" && ok) print uri }' "$f" | head -n 1)
  [ -n "$mirror" ] && break
done
if [ -z "$mirror" ]; then
  mirror=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
    awk -v suite="$suite" '$1 == "deb" { i = 2; if ($2 ~ /^\[/) while ($i !~ /\]$/) i++; if ($2 ~ /^\[/) i++;
                                         if ($(i + 1) == suite) { print $i; exit } }')
fi
[ -n "$mirror" ] || skip "no apt source for $suite in /etc/apt/sources.list(.d) to take the mirror from"
mirror=${mirror%/}
say "Debian $suite from $mirror"

# The archive must answer (apt's proxy settings are honoured through http_proxy).
proxy=$(apt-config shell P Acquire::http::Proxy 2>/dev/null | sed -n "s/^P='\(.*\)'$/\1/p")
[ -n "$proxy" ] && export http_proxy=${http_proxy:-$proxy}
fetch() { # url: exit 0 when it can be read
  if command -v curl >/dev/null; then
    curl -fsS -o /dev/null --max-time 20 "$1"
  elif command -v wget >/dev/null; then
    wget -q -O /dev/null --timeout=20 --tries=1 "$1"
  else
    python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=20).read()' "$1"
  fi
}
fetch "$mirror/dists/$suite/Release" 2>/dev/null || skip "no network to the archive ($mirror/dists/$suite/Release cannot be read)"
phase checks

# ---- 1. the packages ----------------------------------------------------------
grep -q '^XCCL_WITH_NCCL:BOOL=OFF' "$build/CMakeCache.txt" && with_nccl=0 || with_nccl=1
grep -q '^XCCL_HAVE_CUDA:INTERNAL=ON' "$build/CMakeCache.txt" && with_cuda=1 || with_cuda=0
pkgdir=$build/packages
rm -rf "$pkgdir"
(cd "$build" && timeout 900 cpack -G DEB --config CPackConfig.cmake) >"$build/package-cpack.log" 2>&1 ||
  { tail -n 40 "$build/package-cpack.log" >&2; fail "cpack -G DEB failed (whole log: $build/package-cpack.log)"; }
names="libxccl0 libxccl-dev xccl-tools"
[ $with_nccl = 1 ] && names="$names libnccl2-xccl"
debs=()
for n in $names; do
  set -- "$pkgdir"/"${n}"_*.deb
  [ -f "$1" ] || fail "cpack made no ${n}_*.deb in $pkgdir"
  debs+=("$1")
  say "$(basename "$1"): Depends: $(dpkg-deb -f "$1" Depends)"
done
contents=$(dpkg-deb -c "$pkgdir"/libxccl-dev_*.deb)
echo "$contents" | grep -q '/usr/include/xccl_version.h$' || fail "libxccl-dev lacks xccl_version.h"
contents=$(dpkg-deb -c "$pkgdir"/xccl-tools_*.deb)
echo "$contents" | grep -q '/usr/bin/xccl-sim$' || fail "xccl-tools lacks xccl-sim"
phase cpack

# ---- 2. the clean root ----------------------------------------------------------
# What the consumer needs to build, and the run-time libraries the .debs
# depend on (first alternative, versions dropped, the four themselves left
# out), so that debootstrap fetches most in one pass. The -dev packages that
# libxccl-dev depends on are left to apt (step 3): debootstrap's resolver
# does not follow virtual packages (libhwloc-dev -> libltdl-dev -> automake-1.16).
include="gcc,libc6-dev,make,cmake,pkg-config,ca-certificates"
for d in "${debs[@]}"; do
  for dep in $(dpkg-deb -f "$d" Depends | tr ',' '\n' | sed 's/|.*//; s/(.*)//; s/[[:space:]]//g'); do
    case " $names " in *" $dep "*) continue ;; esac
    case $dep in *-dev) continue ;; esac
    include="$include,$dep"
  done
done
include=$(echo "$include" | tr ',' '\n' | sort -u | paste -sd, -)
key=$(printf '%s %s %s' "$suite" "$mirror" "$include" | sha256sum | cut -c1-12)
cache=$build/package-root
base=$cache/$suite-$key
if [ ! -f "$base/.complete" ]; then
  rm -rf "$cache"  # one root at a time: an older key's is of no more use
  mkdir -p "$cache"
  say "debootstrap --variant=minbase $suite (cold; cached in $base) with $include"
  timeout 1200 debootstrap --variant=minbase --include="$include" "$suite" "$base" "$mirror" \
    >"$cache/debootstrap.log" 2>&1 ||
    { tail -n 40 "$cache/debootstrap.log" >&2; fail "debootstrap failed (whole log: $cache/debootstrap.log)"; }
  rm -rf "$base"/var/cache/apt/archives/*.deb
  touch "$base/.complete"
  phase debootstrap
else
  say "the root of $suite is cached in $base"
fi

root=$cache/run
mounted=()
cleanup() {
  local m
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
    m=${mounted[i]}
    umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || say "could not unmount $m"
  done
  if [ "${XCCL_KEEP_TMP:-0}" = 1 ]; then
    say "keeping $root"
  else
    # Only once nothing is mounted under it.
    if ! grep -q " $root/" /proc/mounts; then rm -rf "$root"; fi
  fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
grep -q " $root/" /proc/mounts && fail "something is still mounted under $root from an earlier run"
rm -rf "$root"
cp -a "$base" "$root"
mount -t proc proc "$root/proc" && mounted+=("$root/proc")
mkdir -p "$root/dev/shm"
mount -t tmpfs -o mode=1777,size=512m tmpfs "$root/dev/shm" && mounted+=("$root/dev/shm")
[ -e "$root/dev/null" ] || fail "debootstrap left no /dev/null in the root (no mknod here?)"
cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
in_root() { # seconds command...: runs in the root, a clean environment
  local s=$1
  shift
  timeout --kill-after=10 "$s" chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
    LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive "$@"
}
phase root-copy

# ---- 3. apt-get install ./*.deb -----------------------------------------------
mkdir -p "$root/tmp/debs"
cp "${debs[@]}" "$root/tmp/debs/"
in_root 300 apt-get update >"$build/package-apt.log" 2>&1 ||
  { tail -n 20 "$build/package-apt.log" >&2; fail "apt-get update failed in the root"; }
in_debs=()
for d in "${debs[@]}"; do in_debs+=("/tmp/debs/$(basename "$d")"); done
in_root 600 apt-get install -y --no-install-recommends "${in_debs[@]}" >>"$build/package-apt.log" 2>&1 ||
  { tail -n 40 "$build/package-apt.log" >&2; fail "apt-get install of the .debs failed (log: $build/package-apt.log)"; }
for n in $names; do
  in_root 30 dpkg-query -W -f='${Status}\n' "$n" | grep -q 'install ok installed' || fail "$n is not installed"
done
[ -e "$root/usr/lib/x86_64-linux-gnu/libnccl.so.2" ] && fail "libnccl2-xccl put libnccl.so.2 on the loader's path"
phase apt-install

# ---- 4. build and run against the installed files ---------------------------------
mkdir -p "$root/tmp/consumer"
cp "$src/tests/package/consumer/allreduce.c" "$src/tests/package/consumer/CMakeLists.txt" \
  "$src/tests/install/consumer/nccl_main.c" "$root/tmp/consumer/"
cflags="-std=c11 -Wall -Wextra -Werror"
in_root 120 sh -ec "cd /tmp/consumer && cc $cflags allreduce.c \$(pkg-config --cflags --libs xccl) -o allreduce_pc" ||
  fail "cc allreduce.c \$(pkg-config --cflags --libs xccl) failed in the root"
in_root 300 sh -ec 'cd /tmp/consumer && cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null &&
                    cmake --build build >/dev/null' || fail "the find_package(xccl) consumer did not configure or build in the root"
if [ $with_cuda = 0 ]; then  # libxccl.a of a CUDA build needs CUDA's runtime, not in the root
  # libxccl.a with its dependencies' shared libraries, as tests/install does.
  in_root 120 sh -ec "cd /tmp/consumer && cc $cflags allreduce.c \$(pkg-config --variable=libdir xccl)/libxccl.a \
    \$(pkg-config --libs \$(pkg-config --print-requires-private xccl)) \
    \$(sed -n 's/^Libs.private://p' \$(pkg-config --variable=pcfiledir xccl)/xccl.pc) -o allreduce_static" ||
    fail "a static link of libxccl.a with xccl.pc's private dependencies failed in the root"
fi
phase consumer-build

progs="allreduce_pc build/allreduce_cmake"
[ $with_cuda = 0 ] && progs="$progs allreduce_static"
for prog in $progs; do
  for how in shm socket; do
    env=(XCCL_SOCKET_IFNAME=lo XCCL_TIMEOUT=60)
    [ $how = socket ] && env+=(XCCL_SHM_DISABLE=1)
    out=$(in_root 120 env "${env[@]}" xccl-run -n 2 "/tmp/consumer/$prog" 2>&1) ||
      { echo "$out" >&2; fail "xccl-run -n 2 $prog ($how) failed in the root"; }
    [ "$(echo "$out" | grep -c 'values summed right')" = 2 ] || { echo "$out" >&2; fail "$prog ($how): not 2 ranks right"; }
    say "ok: $prog, 2 ranks over $how"
  done
done
if [ $with_nccl = 1 ]; then
  in_root 120 sh -ec "cd /tmp/consumer && cc $cflags nccl_main.c -I/usr/include/xccl-nccl -L/usr/lib/xccl-nccl \
    -Wl,-rpath,/usr/lib/xccl-nccl -lnccl -o nccl_prog && ldd nccl_prog | grep -q '/usr/lib/xccl-nccl/libnccl.so.2'" ||
    fail "an NCCL program did not build with -lnccl against libnccl2-xccl, or does not load its libnccl.so.2"
  in_root 60 env XCCL_SOCKET_IFNAME=lo /tmp/consumer/nccl_prog || fail "the NCCL program failed in the root"
  say "ok: an NCCL program on libnccl2-xccl"
fi
phase consumer-run

say "PASS in $(($(date +%s) - t0)) s: the .debs install with apt into a clean $suite root, and programs build against them with pkg-config and find_package(xccl) and run"
