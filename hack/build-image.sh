#!/usr/bin/env bash
# Builds the operator image without a container engine (replaces a Dockerfile build):
#   usage: hack/build-image.sh OUT_DIR [hack/image flags, e.g. -push 127.0.0.1:5000/oso:dev -insecure]
# Assembles OUT_DIR/rootfs and writes the image as an OCI layout to OUT_DIR/layout; prints the
# manifest digest (also in OUT_DIR/digest). The image holds:
#   /usr/local/bin/shell-operator   built from the Go module proxy, static (hack/k8s-tools.sh, pinned)
#   /usr/local/bin/openstack-sync   the host, CGO_ENABLED=0, -trimpath
#   /plugins/*.wasm, /plugins/SHA256SUMS   hack/build-plugins.sh
#   /bin/busybox and its applets (/bin/sh for the chart's init container and hook wrappers), and
#   /etc/ssl/certs/ca-certificates.crt, from the Debian packages pinned in hack/image/debs.lock
# Reproducible: the same sources, Go and packages give the same digest (hack/e2e.sh builds twice
# and compares). Env: K8S_BIN (the tools folder; built when unset), PLUGINS_DIR (already built
# plugins; built when unset), VERSION (default: git describe), SOURCE_DATE_EPOCH (default: 0),
# DEB_CACHE (default: $(go env GOPATH)/openstack-sync-tools/debs).
set -euo pipefail
out=${1:?usage: hack/build-image.sh OUT_DIR [hack/image flags]}
shift
cd "$(dirname "$0")/.."
mkdir -p "$out"
out=$(cd "$out" && pwd)
root=$out/rootfs
rm -rf "$root" "$out/layout" "$out/debs"
mkdir -p "$root/usr/local/bin" "$root/plugins" "$root/bin" "$root/etc/ssl/certs" "$root/hooks" "$root/tmp" \
  "$root/var/cache/openstack-sync" "$out/debs"
version=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}

k8s_bin=${K8S_BIN:-$(hack/k8s-tools.sh)}
install -m 0755 "$k8s_bin/shell-operator-static" "$root/usr/local/bin/shell-operator"
CGO_ENABLED=0 go build -trimpath -buildvcs=false -ldflags "-s -w -X main.version=$version" \
  -o "$root/usr/local/bin/openstack-sync" ./host/cmd/openstack-sync
plugins=${PLUGINS_DIR:-$out/plugins-build}
[ -n "${PLUGINS_DIR:-}" ] || hack/build-plugins.sh "$plugins" >&2
cp "$plugins"/*.wasm "$root/plugins/"
(cd "$root/plugins" && sha256sum -- *.wasm > SHA256SUMS)

# Debian packages: download the pinned version once, check its digest, unpack.
cache=${DEB_CACHE:-$(go env GOPATH)/openstack-sync-tools/debs}
mkdir -p "$cache"
while read -r pkg ver sum; do
  case $pkg in ''|'#'*) continue ;; esac
  deb=$cache/${pkg}_${ver//:/%3a}.deb
  if [ ! -f "$deb" ]; then
    (cd "$cache" && apt-get download "$pkg=$ver" >&2) ||
      { echo "build-image: cannot download $pkg $ver; update hack/image/debs.lock" >&2; exit 1; }
    mv "$cache/${pkg}_${ver//:/%3a}"_*.deb "$deb"
  fi
  got=$(sha256sum "$deb" | cut -d' ' -f1)
  [ "$got" = "$sum" ] || { echo "build-image: $deb has sha256 $got, hack/image/debs.lock pins $sum" >&2; exit 1; }
  dpkg-deb -x "$deb" "$out/debs/$pkg"
done < hack/image/debs.lock

install -m 0755 "$out/debs/busybox-static/bin/busybox" "$root/bin/busybox"
# Every applet as a symlink where busybox says it lives (sh, sha256sum, cut, ... for the wrappers).
"$root/bin/busybox" --list-full | LC_ALL=C sort | while read -r applet; do
  case $applet in bin/busybox|linuxrc) continue ;; esac
  mkdir -p "$root/$(dirname "$applet")"
  ln -s /bin/busybox "$root/$applet"
done
find "$out/debs/ca-certificates/usr/share/ca-certificates/mozilla" -name '*.crt' -print0 | LC_ALL=C sort -z |
  xargs -0 cat > "$root/etc/ssl/certs/ca-certificates.crt"
printf 'root:x:0:0:root:/root:/bin/sh\nnonroot:x:65532:65532:nonroot:/home/nonroot:/bin/sh\n' > "$root/etc/passwd"
printf 'root:x:0:\nnonroot:x:65532:\n' > "$root/etc/group"

digest=$(go run ./hack/image -root "$root" -o "$out/layout" -version "$version" "$@")
echo "$digest" > "$out/digest"
echo "$digest"
