#!/usr/bin/env bash
# The Debian bookworm base image, made here with debootstrap (no image registry is reachable):
# homing-local/debian:bookworm, or for another architecture (`build-base.sh arm64`, the release's
# second image) homing-local/debian:bookworm-arm64, its programs run by QEMU user emulation
# (ensure-qemu.sh). Skipped when the image exists. It trusts the host's local CAs
# (/usr/local/share/ca-certificates): where HTTPS egress is intercepted, pip inside needs them.
set -euo pipefail
e2e=$(cd "$(dirname "$0")/.." && pwd)
source "$e2e/images/lib.sh"
arch=${1:-$(host_arch)}
image=${BASE_IMAGE:-$(debian_base "$arch")}
if have_image "$image"; then echo "$image: present" >&2; exit 0; fi
[[ $arch == "$(host_arch)" ]] || bash "$e2e/images/ensure-qemu.sh" "$arch"

command -v debootstrap >/dev/null || {
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null; }
mirror=$(debian_mirror)
root=$(mktemp -d "${TMPDIR:-/tmp}/homing-debian.XXXXXX")
trap 'rm -rf "$root"' EXIT
echo "debootstrap bookworm ($arch) into $root" >&2
debootstrap --arch="$arch" --variant=minbase --include=ca-certificates bookworm "$root" "$mirror" >"$root.log" 2>&1 || {
  tail -n 20 "$root.log" >&2; exit 1; }
rm -f "$root.log"
if compgen -G '/usr/local/share/ca-certificates/*.crt' >/dev/null; then
  cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/"
  chroot "$root" update-ca-certificates >/dev/null
fi
# apt inside the image uses the mirror it was made from, plus updates and security.
cat >"$root/etc/apt/sources.list" <<SRC
deb $mirror bookworm main
deb $mirror bookworm-updates main
deb ${mirror%/debian}/debian-security bookworm-security main
SRC
# Leaner images: no apt caches, no docs from later installs.
printf 'APT::Install-Recommends "false";\nAPT::Install-Suggests "false";\n' >"$root/etc/apt/apt.conf.d/90homing"
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
# Not `docker import`: dockerd 20.10 ignores its --platform and would label an arm64 tree amd64.
# A FROM-scratch build of the tree takes the platform it is given.
ctx=$(mktemp -d "${TMPDIR:-/tmp}/homing-debian-ctx.XXXXXX")
trap 'rm -rf "$root" "$ctx"' EXIT
tar -C "$root" -cf "$ctx/rootfs.tar" .
printf 'FROM scratch\nADD rootfs.tar /\nCMD ["/bin/bash"]\n' >"$ctx/Dockerfile"
DOCKER_BUILDKIT=0 quiet_build --platform "linux/$arch" -t "$image" "$ctx"
echo "$image: built" >&2
