#!/usr/bin/env bash
# Makes this machine run another architecture's programs (`ensure-qemu.sh arm64`): QEMU user
# emulation registered with the kernel's binfmt_misc, so that debootstrap's chroot, `docker
# build --platform linux/arm64` and `docker run --platform linux/arm64` work on an amd64 host.
# Uses Debian's qemu-user-static and binfmt-support (installed when missing); their handlers
# carry the F flag (the interpreter is opened at registration), so they work inside
# containers and chroots without copying QEMU in. Idempotent.
set -euo pipefail
arch=${1:?usage: ensure-qemu.sh ARCH (arm64, ...)}
case $arch in
  arm64) qemu=aarch64 ;;
  amd64) qemu=x86_64 ;;
  *) qemu=$arch ;;
esac
handler=/proc/sys/fs/binfmt_misc/qemu-$qemu
registered() { [[ -f $handler ]] && head -n1 "$handler" | grep -qx enabled && grep -q '^flags:.*F' "$handler"; }
registered && exit 0

[[ $(id -u) == 0 ]] || { echo "ensure-qemu: qemu-$qemu is not registered with binfmt_misc; doing it needs root" >&2; exit 1; }
# In a container (or before systemd mounted it) binfmt_misc may not be mounted.
[[ -f /proc/sys/fs/binfmt_misc/register ]] || mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
if ! command -v update-binfmts >/dev/null || [[ ! -f /usr/share/binfmts/qemu-$qemu ]]; then
  echo "ensure-qemu: installing qemu-user-static and binfmt-support (Debian)" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq qemu-user-static binfmt-support >/dev/null
fi
# The packages' scripts register the handlers where they can; without an init system they may not.
registered || update-binfmts --enable "qemu-$qemu" >/dev/null 2>&1 || update-binfmts --import "qemu-$qemu"
registered || { echo "ensure-qemu: qemu-$qemu still not registered (see $handler)" >&2; exit 1; }
echo "ensure-qemu: qemu-$qemu registered" >&2
