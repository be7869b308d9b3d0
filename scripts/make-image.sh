#!/usr/bin/env bash
# The natsfleet container image, from its .deb on a Debian 12 base, with Debian's own tools only
# (mmdebstrap, umoci): no registry but Debian's. The result is an OCI image archive that
# `podman load`, `skopeo copy oci-archive:...` and `ctr image import` take.
#
#   scripts/make-image.sh PACKAGE_DIR OUTPUT.tar
#
# PACKAGE_DIR holds natsfleet_<version>_<arch>.deb (`make package`, stripped). The image runs
# `natsfleet run /etc/natsfleet/natsfleet.toml` as user natsfleet, uid and gid 65532 (the
# Kubernetes files' runAsUser), with nothing but the package, its dependencies and CA
# certificates on Debian's essential set.
set -euo pipefail

packages=${1:?usage: make-image.sh PACKAGE_DIR OUTPUT.tar}
output=${2:?usage: make-image.sh PACKAGE_DIR OUTPUT.tar}
arch=$(dpkg --print-architecture)
deb=$(find "$packages" -maxdepth 1 -name "natsfleet_*_${arch}.deb" | sort | tail -n 1)
if [ -z "$deb" ]; then
  echo "make-image: no natsfleet_*_${arch}.deb in $packages (run make package)" >&2
  exit 2
fi
deb=$(realpath "$deb")
version=$(dpkg-deb --field "$deb" Version)
for tool in mmdebstrap umoci; do
  command -v "$tool" >/dev/null || {
    echo "make-image: $tool is missing (scripts/install-deps.sh image)" >&2
    exit 2
  }
done

work=$(mktemp -d "${TMPDIR:-/tmp}/natsfleet-image.XXXXXX")
trap 'rm -rf "$work"' EXIT
uid=65532

# The user exists before the package is configured, so its postinst keeps this uid. No
# documentation, manuals or translations, but each package's copyright.
mmdebstrap --quiet --variant=essential --include=ca-certificates --include="$deb" \
  --hook-dir=/usr/share/mmdebstrap/hooks/file-mirror-automount \
  --essential-hook="echo 'natsfleet:x:$uid:$uid:natsfleet daemon:/var/lib/natsfleet:/usr/sbin/nologin' >> \"\$1/etc/passwd\"" \
  --essential-hook="echo 'natsfleet:x:$uid:' >> \"\$1/etc/group\"" \
  --essential-hook="echo 'natsfleet:*:20000:0:99999:7:::' >> \"\$1/etc/shadow\"" \
  --dpkgopt='path-exclude=/usr/share/man/*' \
  --dpkgopt='path-exclude=/usr/share/doc/*' \
  --dpkgopt='path-include=/usr/share/doc/*/copyright' \
  --dpkgopt='path-exclude=/usr/share/locale/*' \
  --dpkgopt='path-exclude=/usr/share/info/*' \
  --customize-hook='rm -rf "$1"/var/cache/apt/* "$1"/var/lib/apt/lists/* "$1"/var/log/*' \
  bookworm "$work/rootfs.tar"

layout="$work/oci"
image="$layout:$version"
rootless=()
[ "$(id -u)" -eq 0 ] || rootless=(--rootless)
umoci init --layout "$layout"
umoci new --image "$image"
umoci unpack "${rootless[@]}" --image "$image" "$work/bundle"
tar --numeric-owner -C "$work/bundle/rootfs" -xf "$work/rootfs.tar"
umoci repack --image "$image" "$work/bundle"
umoci config --image "$image" \
  --os linux --architecture "$arch" \
  --config.user "$uid:$uid" \
  --config.workingdir /var/lib/natsfleet \
  --config.entrypoint /usr/bin/natsfleet \
  --config.cmd run --config.cmd /etc/natsfleet/natsfleet.toml \
  --config.stopsignal SIGTERM \
  --config.exposedports 9464/tcp \
  --config.label org.opencontainers.image.title=natsfleet \
  --config.label org.opencontainers.image.version="$version" \
  --config.label org.opencontainers.image.licenses=Apache-2.0 \
  --config.label org.opencontainers.image.base.name=debian:bookworm \
  --author natsfleet
umoci gc --layout "$layout"
mkdir -p "$(dirname "$output")"
tar --numeric-owner -C "$layout" -cf "$output" .
echo "make-image: $output ($(du -h "$output" | cut -f1), natsfleet $version on Debian 12)"
