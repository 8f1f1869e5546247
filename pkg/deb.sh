#!/bin/sh
# Build the Debian package of pmx:
#     pkg/deb.sh [OUTDIR]         (default target/debian)
# writes OUTDIR/pmx_VERSION_ARCH.deb holding
#   /usr/bin/pmx                          the lean release binary
#   /usr/share/man/man1/pmx*.1.gz         `pmx man`'s pages
#   bash, zsh and fish completions        `pmx completions SHELL`
#   /usr/lib/libpmx.so, libpmx.a, /usr/include/pmx.h, pmx.hpp,
#   /usr/lib/pkgconfig/pmx.pc             crates/pmx-capi/install.sh
#   /lib/systemd/system/pmx-serve.service and /etc/pmx/serve.conf (a
#                                         conffile) from deploy/
#   /usr/share/doc/pmx/                   copyright, both licenses, README
# The release build is `cargo build --release --locked -p pmx-cli`, then
# `-p pmx-capi` (apart, as `cargo install` builds pmx: the same crates, so
# the function names of crates/pmx-cli/startup.order) unless PMX_NO_BUILD
# is set (the binaries are already in $CARGO_TARGET_DIR/release, e.g.
# after `cargo install --target-dir`).
# Needs dpkg-deb, gzip, strip and objdump (binutils); no root (files are owned by root in the
# package through --root-owner-group).
set -eu
repo=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$repo/target/debian}
rel=${CARGO_TARGET_DIR:-$repo/target}/release
if [ -z "${PMX_NO_BUILD:-}" ]; then
    cargo build --release --locked -q -p pmx-cli --manifest-path "$repo/Cargo.toml"
    cargo build --release --locked -q -p pmx-capi --manifest-path "$repo/Cargo.toml"
fi
for f in pmx libpmx.so libpmx.a; do
    [ -e "$rel/$f" ] || { echo "pkg/deb.sh: $rel/$f is missing (cargo build --release -p pmx-cli -p pmx-capi)" >&2; exit 1; }
done
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$repo/Cargo.toml" | head -n 1)
arch=$(dpkg --print-architecture)
root=$(mktemp -d)
chmod 755 "$root"
trap 'rm -rf "$root"' EXIT
pmx=$rel/pmx

install -D -m 0755 "$pmx" "$root/usr/bin/pmx"
"$pmx" man --dir "$root/usr/share/man/man1" 2>/dev/null
gzip -9n "$root"/usr/share/man/man1/*.1
install -d "$root/usr/share/bash-completion/completions" \
    "$root/usr/share/zsh/vendor-completions" \
    "$root/usr/share/fish/vendor_completions.d"
"$pmx" completions bash >"$root/usr/share/bash-completion/completions/pmx"
"$pmx" completions zsh >"$root/usr/share/zsh/vendor-completions/_pmx"
"$pmx" completions fish >"$root/usr/share/fish/vendor_completions.d/pmx.fish"

DESTDIR=$root PMX_LIB_DIR=$rel sh "$repo/crates/pmx-capi/install.sh" /usr >/dev/null
# The static library's objects keep their symbols, not their debug info.
strip --strip-debug "$root/usr/lib/libpmx.a"

install -d "$root/lib/systemd/system" "$root/etc/pmx"
sed 's|/usr/local/bin/pmx|/usr/bin/pmx|g' "$repo/deploy/pmx-serve.service" \
    >"$root/lib/systemd/system/pmx-serve.service"
install -m 0644 "$repo/deploy/pmx-serve.conf" "$root/etc/pmx/serve.conf"

doc=$root/usr/share/doc/pmx
install -d "$doc"
install -m 0644 "$repo/LICENSE-MIT" "$repo/LICENSE-APACHE" "$repo/README.md" "$doc/"
install -m 0644 "$repo/crates/pmx-events/data/LICENSE-intel-perfmon" "$doc/"
{
    echo "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/"
    echo "Upstream-Name: pmx"
    echo
    echo "Files: *"
    echo "Copyright: the pmx authors"
    echo "License: MIT or Apache-2.0"
    echo " pmx may be used under the MIT license (LICENSE-MIT) or the Apache"
    echo " License 2.0 (LICENSE-APACHE, and /usr/share/common-licenses/Apache-2.0),"
    echo " at your option. Its Rust dependencies, linked into /usr/bin/pmx and"
    echo " libpmx, are under MIT, Apache-2.0 or compatible permissive licenses"
    echo " (ring: Apache-2.0 AND ISC; webpki-roots: CDLA-Permissive-2.0; zstd:"
    echo " BSD-3-Clause)."
    echo
    echo "Files: crates/pmx-events/data/intel-perfmon.pmxt"
    echo "Copyright: 2021, Intel Corporation"
    echo "License: BSD-3-Clause"
    echo " Intel's event and metric tables (facts, no descriptions), built into"
    echo " /usr/bin/pmx; the license text is in LICENSE-intel-perfmon."
} >"$doc/copyright"

# The newest glibc symbol version the binaries need.
# Packed relative relocations (DT_RELR, crates/pmx-cli/build.rs) need 2.36.
relr=$(objdump -p "$root/usr/bin/pmx" | grep -c GLIBC_ABI_DT_RELR || true)
glibc=$({ objdump -T "$root/usr/bin/pmx" "$root/usr/lib/libpmx.so" 2>/dev/null |
    grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//'
    [ "$relr" = 0 ] || echo 2.36; } | sort -uV | tail -n 1)
size=$(du -sk "$root" | cut -f1)
install -d "$root/DEBIAN"
cat >"$root/DEBIAN/control" <<CONTROL
Package: pmx
Version: $version
Architecture: $arch
Maintainer: pmx developers <pmx@example.invalid>
Installed-Size: $size
Depends: libc6 (>= ${glibc:-2.31}), libgcc-s1
Recommends: libpfm4
Section: devel
Priority: optional
Homepage: https://example.invalid/pmx
Description: CPU hardware performance counters, exactly
 pmx counts events for a command, processes or CPUs (pmx stat), samples
 into perf.data files (pmx record, report, annotate, script), evaluates
 derived metrics and the top-down tree, programs the PMU through the msr
 driver, and serves counters to Prometheus (pmx serve). The package also
 holds the C library (libpmx, pmx.h, pmx.hpp, pkg-config's pmx.pc), the
 man pages, the bash, zsh and fish completions, and the systemd unit of
 pmx serve (not enabled).
CONTROL
echo /etc/pmx/serve.conf >"$root/DEBIAN/conffiles"
# The loader's cache learns of libpmx.so (dpkg's ldconfig trigger).
echo "activate-noawait ldconfig" >"$root/DEBIAN/triggers"
mkdir -p "$out"
deb=$out/pmx_${version}_${arch}.deb
dpkg-deb --root-owner-group -Zxz --build "$root" "$deb" >/dev/null
echo "$deb"
