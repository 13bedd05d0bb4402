#!/bin/sh
# Installs the airlock release binary for this machine.
#
#   curl -fsSL "$BASE/install.sh" | sh -s -- "$BASE"
#   sh install.sh [--prefix DIR] [BASE_URL]
#
# BASE_URL (or $AIRLOCK_BASE_URL) is the folder holding the release files (airlock-linux-x64,
# airlock-linux-arm64, airlock-linux-x64-musl, SHA256SUMS); no host is built in.
# Installs to $PREFIX/bin/airlock, PREFIX defaulting to ~/.local (--prefix wins over $PREFIX).
# Picks the binary from `uname -m` (x86_64; aarch64 or arm64) and the C library (what `ldd --version` names;
# without it, musl when /lib/ld-musl-* exists and glibc's loader does not), downloads it and SHA256SUMS with curl or wget,
# checks the sha256 (sha256sum or shasum -a 256), and installs nothing unless it matches.
# Exit 0 installed; 1 refused or failed (nothing installed); 2 usage.
set -eu

say() { printf 'airlock-install: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }
usage() { say "usage: install.sh [--prefix DIR] BASE_URL   (or AIRLOCK_BASE_URL=BASE_URL)"; exit 2; }

base="${AIRLOCK_BASE_URL:-}"
prefix="${PREFIX:-}"
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) [ $# -ge 2 ] || usage; prefix="$2"; shift 2 ;;
    --prefix=*) prefix="${1#--prefix=}"; shift ;;
    -h|--help) usage ;;
    -*) say "unknown option: $1"; usage ;;
    *) base="$1"; shift ;;
  esac
done
[ -n "$base" ] || usage
base="${base%/}"
# Only an http(s) URL: anything else (a value starting with `-` would reach curl or wget as an option)
# is refused before any tool sees it.
case "$base" in
  https://*|http://*) ;;
  *) die "the base URL must start with https:// (or http:// for a mirror on a trusted network): $base" ;;
esac
if [ -z "$prefix" ]; then
  [ -n "${HOME:-}" ] || die "HOME is not set; give --prefix DIR"
  prefix="$HOME/.local"
fi

os="$(uname -s)"
[ "$os" = "Linux" ] || die "no airlock build for $os (Linux only; macOS would need a Seatbelt launcher)"

machine="$(uname -m)"
case "$machine" in
  x86_64|amd64) arch=x64 ;;
  aarch64|arm64) arch=arm64 ;;
  *) die "no airlock build for this architecture: $machine (builds: x86_64, aarch64)" ;;
esac

# The C library the system's programs use: `ldd --version` names it (GNU libc's "GLIBC"/"GNU libc", musl's "musl
# libc"). Only without an ldd that says, the dynamic loaders decide: musl when its loader is there and glibc's is not
# (Debian's `musl` package puts /lib/ld-musl-* beside glibc, whose programs are still glibc's).
libc=
if command -v ldd >/dev/null 2>&1; then
  case "$(ldd --version 2>&1 | head -n 2)" in
    *musl*) libc=musl ;;
    *GLIBC*|*"GNU libc"*|*glibc*) libc=glibc ;;
  esac
fi
if [ -z "$libc" ]; then
  libc=glibc
  for f in /lib/ld-musl-*.so.1; do
    [ -e "$f" ] && [ ! -e /lib64/ld-linux-x86-64.so.2 ] && [ ! -e /lib/ld-linux-aarch64.so.1 ] && libc=musl
  done
fi

file="airlock-linux-$arch"
if [ "$libc" = musl ]; then
  [ "$arch" = x64 ] || die "no airlock build for musl on $machine (musl builds: x86_64)"
  file="$file-musl"
fi

# An https:// base never follows a redirect down to another protocol (http:// would hand both the
# binary and SHA256SUMS to anyone on the path): curl refuses it, wget's redirects are read back from
# its server response headers (wget has no switch for it).
if command -v curl >/dev/null 2>&1; then
  fetch() {
    case "$1" in
      https://*) curl -fsSL --globoff --proto-redir =https -o "$2" -- "$1" ;;
      *) curl -fsSL --globoff -o "$2" -- "$1" ;;
    esac
  }
elif command -v wget >/dev/null 2>&1; then
  fetch() {
    wget -q -S -O "$2" -- "$1" 2>"$tmp/headers" || return 1
    case "$1" in
      https://*)
        if grep -Ei '^ *location: *[a-z][a-z0-9+.-]*:' "$tmp/headers" | grep -Eiqv '^ *location: *https://'; then
          say "$1 redirects to a protocol other than https"
          return 1
        fi ;;
    esac
  }
else
  die "neither curl nor wget is installed"
fi

if command -v sha256sum >/dev/null 2>&1; then
  sha256() { sha256sum "$1" | cut -d ' ' -f 1; }
elif command -v shasum >/dev/null 2>&1; then
  sha256() { shasum -a 256 "$1" | cut -d ' ' -f 1; }
else
  die "neither sha256sum nor shasum is installed; cannot check the download"
fi

tmp="$(mktemp -d "${TMPDIR:-/tmp}/airlock-install.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT INT TERM

say "downloading $base/$file ($machine, $libc)"
fetch "$base/SHA256SUMS" "$tmp/SHA256SUMS" || die "could not download $base/SHA256SUMS; nothing installed"
fetch "$base/$file" "$tmp/$file" || die "could not download $base/$file; nothing installed"

want="$(awk -v f="$file" '($2 == f || $2 == "*" f) && !seen[$1]++ { print $1 }' "$tmp/SHA256SUMS")"
[ -n "$want" ] || die "SHA256SUMS has no line for $file; nothing installed"
case "$want" in
  *"
"*) die "SHA256SUMS has more than one checksum for $file; nothing installed" ;;
esac
got="$(sha256 "$tmp/$file")"
if [ "$got" != "$want" ]; then
  die "checksum mismatch for $file: SHA256SUMS says $want, the download is $got; nothing installed"
fi

dest="$prefix/bin"
mkdir -p "$dest" || die "cannot create $dest; nothing installed"
# mv onto a directory (or a link to one) would move the binary into it, outside the install path.
[ ! -d "$dest/airlock" ] || die "$dest/airlock is a directory (or a link to one); nothing installed"
chmod 755 "$tmp/$file"
# the temp copy: a fresh file (mktemp: O_EXCL, unguessable name), never a name someone could plant a link at
new="$(mktemp "$dest/.airlock.new.XXXXXX")" || die "cannot write to $dest; nothing installed"
cp "$tmp/$file" "$new" || { rm -f "$new"; die "cannot write to $dest; nothing installed"; }
chmod 755 "$new" || { rm -f "$new"; die "cannot write to $dest; nothing installed"; }
mv -f "$new" "$dest/airlock"
version="$("$dest/airlock" --version 2>/dev/null || echo unknown)"
say "installed airlock $version ($file, sha256 $got) to $dest/airlock"
case ":${PATH:-}:" in
  *":$dest:"*) ;;
  *) say "$dest is not on your PATH; add it, e.g.: export PATH=\"$dest:\$PATH\"" ;;
esac
