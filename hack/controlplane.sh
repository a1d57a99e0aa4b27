#!/usr/bin/env bash
# Builds the control-plane binaries (etcd, kube-apiserver, kube-controller-manager,
# and for a real node kube-scheduler, kubelet, kube-proxy)
# from Go modules and links them into bin/. Built binaries live in a cache folder
# outside the clone, keyed by version, so a fresh clone on a machine that built
# them once links them in seconds instead of rebuilding for minutes.
#
# With PLUMB_LINK_ONLY=1 nothing is built and no build is waited for: what
# the cache holds is linked, the rest left out (hack/run.sh, for the node).
#
# usage: hack/controlplane.sh <bin-dir> [binary...]   (default: etcd kube-apiserver)
set -euo pipefail
link_only=${PLUMB_LINK_ONLY:-}

here=$(cd "$(dirname "$0")" && pwd)
bin_dir=$(mkdir -p "$1" && cd "$1" && pwd)
shift
binaries=("$@")
[ ${#binaries[@]} -gt 0 ] || binaries=(etcd kube-apiserver)

kube_version=v1.37.2
etcd_version=v3.7.0
cache_root=${PLUMB_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/plumb}
cache_dir="$cache_root/controlplane/kube-$kube_version-etcd-$etcd_version-$(go env GOOS)-$(go env GOARCH)"
mkdir -p "$cache_dir"
# One build at a time per cache folder, across clones and parallel makes.
exec 9>"$cache_dir/.lock"
[ -n "$link_only" ] || flock 9

ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$kube_version \
 -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=37 \
 -X k8s.io/client-go/pkg/version.gitVersion=$kube_version"

package_of() {
  case "$1" in
    etcd) echo go.etcd.io/etcd/server/v3 ;;
    kube-apiserver) echo k8s.io/kubernetes/cmd/kube-apiserver ;;
    kube-controller-manager) echo k8s.io/kubernetes/cmd/kube-controller-manager ;;
    # The real node (hack/node.sh, e2e/localenv's Node option): localenv runs no
    # scheduler otherwise, so Pods would never be bound to the kubelet.
    kube-scheduler) echo k8s.io/kubernetes/cmd/kube-scheduler ;;
    kubelet) echo k8s.io/kubernetes/cmd/kubelet ;;
    kube-proxy) echo k8s.io/kubernetes/cmd/kube-proxy ;;
    *) echo "unknown control-plane binary: $1" >&2; exit 2 ;;
  esac
}

for name in "${binaries[@]}"; do
  pkg=$(package_of "$name")
  if [ ! -x "$cache_dir/$name" ]; then
    [ -z "$link_only" ] || continue
    echo ">> building $name ($pkg) into $cache_dir; the first build of kube-apiserver takes about 10 minutes on 2 cores"
    start=$(date +%s)
    (cd "$here/tools/controlplane" && GOWORK=off CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$cache_dir/$name.tmp" "$pkg")
    mv "$cache_dir/$name.tmp" "$cache_dir/$name"
    echo ">> built $name in $(( $(date +%s) - start ))s"
  fi
  ln -sf "$cache_dir/$name" "$bin_dir/$name"
done
