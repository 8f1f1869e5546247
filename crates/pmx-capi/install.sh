#!/bin/sh
# Install pmx's C library: lib/libpmx.so, lib/libpmx.a, include/pmx.h,
# include/pmx.hpp and lib/pkgconfig/pmx.pc (from pmx.pc.in), so that
#     cc app.c $(pkg-config --cflags --libs pmx)
# works. Usage:
#     crates/pmx-capi/install.sh [PREFIX]      (default /usr/local)
# DESTDIR is honoured (packaging). The libraries are built with
# `cargo build --release -p pmx-capi` unless PMX_LIB_DIR names a directory
# that already holds libpmx.so and libpmx.a.
set -eu
prefix=${1:-${PREFIX:-/usr/local}}
repo=$(cd "$(dirname "$0")/../.." && pwd)
libs=${PMX_LIB_DIR:-}
if [ -z "$libs" ]; then
    cargo build --release -p pmx-capi --manifest-path "$repo/Cargo.toml"
    libs=${CARGO_TARGET_DIR:-$repo/target}/release
fi
dest=${DESTDIR:-}$prefix
install -d "$dest/lib/pkgconfig" "$dest/include"
install -m 644 "$libs/libpmx.a" "$dest/lib/libpmx.a"
install -m 755 "$libs/libpmx.so" "$dest/lib/libpmx.so"
install -m 644 "$repo/include/pmx.h" "$repo/include/pmx.hpp" "$dest/include/"
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$repo/Cargo.toml" | head -n 1)
sed -e "s|@PREFIX@|$prefix|g" -e "s|@VERSION@|$version|g" \
    "$repo/crates/pmx-capi/pmx.pc.in" >"$dest/lib/pkgconfig/pmx.pc"
echo "installed pmx $version under $dest (pkg-config: $dest/lib/pkgconfig/pmx.pc)"
case "$prefix" in
/usr | /usr/local) command -v ldconfig >/dev/null 2>&1 && [ -z "${DESTDIR:-}" ] && ldconfig || true ;;
esac
