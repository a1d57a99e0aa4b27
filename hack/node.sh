#!/usr/bin/env bash
# Builds a real node's runtime from Go modules: containerd 2.x (with its shim),
# runc, crictl, and the CNI plugins localenv's pod network uses (bridge, host-local,
# loopback, portmap), CoreDNS, the cluster's DNS, and kube-router, whose
# network-policy controller enforces NetworkPolicies with iptables and ipset. kubelet, kube-proxy and kube-scheduler come from
# hack/controlplane.sh, as the API server does. Built binaries live in a cache
# folder outside the clone, keyed by the versions, and are linked into
# <bin-dir>, so a fresh clone links them in seconds.
#
# Each program is built with `go install module/cmd@version`, from its own
# go.mod and go.sum (checked against the checksum database), so none of
# them moves another's dependencies nor Plumb's.
#
# runc is built with cgo and the seccomp tag: kubelet asks the runtime for
# the RuntimeDefault seccomp profile (Plumb's Deployments set it), which a
# runc without seccomp refuses. That needs libseccomp's headers
# (libseccomp-dev), which `make node-assets` installs with apt-get.
#
# With PLUMB_LINK_ONLY=1 nothing is built and no build is waited for: what
# the cache holds is linked, the rest left out (`make run`'s default, which
# falls back to the pod simulator when the node is not all there).
#
# usage: hack/node.sh <bin-dir>
set -euo pipefail
link_only=${PLUMB_LINK_ONLY:-}

bin_dir=$(mkdir -p "$1" && cd "$1" && pwd)

coredns_version=v1.15.0
containerd_version=v2.4.2
runc_version=v1.5.3
cni_version=v1.10.0
crictl_version=v1.37.0
cache_root=${PLUMB_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/plumb}
cache_dir="$cache_root/node/containerd-$containerd_version-runc-$runc_version-cni-$cni_version-crictl-$crictl_version-$(go env GOOS)-$(go env GOARCH)"
mkdir -p "$cache_dir"
# One build at a time per cache folder, across clones and parallel makes.
exec 9>"$cache_dir/.lock"
[ -n "$link_only" ] || flock 9

# build <name> <package@version> <cgo> [go build flags...]
build() {
  local name=$1 pkg=$2 cgo=$3
  shift 3
  if [ ! -x "$cache_dir/$name" ]; then
    # A build renames its result into the cache when done: what is there
    # is whole.
    [ -z "$link_only" ] || return 0
    echo ">> building $name ($pkg) into $cache_dir"
    local start tmp
    start=$(date +%s)
    tmp=$(mktemp -d)
    GOWORK=off GOFLAGS= CGO_ENABLED=$cgo GOBIN="$tmp" go install -trimpath "$@" "$pkg"
    mv "$tmp/$(basename "${pkg%@*}")" "$cache_dir/$name"
    rm -rf "$tmp"
    echo ">> built $name in $(( $(date +%s) - start ))s"
  fi
  ln -sf "$cache_dir/$name" "$bin_dir/$name"
}

cd_ver="-X github.com/containerd/containerd/v2/version.Version=$containerd_version"
build containerd github.com/containerd/containerd/v2/cmd/containerd@$containerd_version 0 \
  -tags "no_btrfs no_devmapper no_zfs" -ldflags "-s -w $cd_ver"
build containerd-shim-runc-v2 github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2@$containerd_version 0 \
  -ldflags "-s -w $cd_ver"
build ctr github.com/containerd/containerd/v2/cmd/ctr@$containerd_version 0 -ldflags "-s -w $cd_ver"
build runc github.com/opencontainers/runc@$runc_version 1 \
  -tags seccomp -ldflags "-s -w -X main.version=${runc_version#v}"
# crictl: localenv removes the Pods' sandboxes through the CRI when the node
# stops, so the CNI plugins tear their network down (veths, IP leases, NAT
# rules) as when kubelet removes a Pod.
build crictl sigs.k8s.io/cri-tools/cmd/crictl@$crictl_version 0 \
  -ldflags "-s -w -X sigs.k8s.io/cri-tools/pkg/version.Version=$crictl_version"
for plugin in bridge host-local loopback portmap; do
  case "$plugin" in host-local) dir=ipam ;; portmap) dir=meta ;; *) dir=main ;; esac
  build "$plugin" github.com/containernetworking/plugins/plugins/$dir/$plugin@$cni_version 0 \
    -ldflags "-s -w -X github.com/containernetworking/plugins/pkg/utils/buildversion.BuildVersion=$cni_version"
done

# CoreDNS, the Pods' nameserver (e2e/localenv/dns.go), in a cache folder of
# its own so that adding it did not rebuild the runtime above.
coredns_cache="$cache_root/node/coredns-$coredns_version-$(go env GOOS)-$(go env GOARCH)"
mkdir -p "$coredns_cache"
exec 8>"$coredns_cache/.lock"
[ -n "$link_only" ] || flock 8
cache_dir=$coredns_cache build coredns github.com/coredns/coredns@$coredns_version 0 -ldflags "-s -w"

# kube-router, only its network-policy controller runs (nodeconfig.go), in a
# cache folder of its own as CoreDNS. v2.1.0 is the one version the module
# proxy here serves (docs/design/node.md, "NetworkPolicies").
kube_router_version=v2.1.0
kube_router_cache="$cache_root/node/kube-router-$kube_router_version-$(go env GOOS)-$(go env GOARCH)"
mkdir -p "$kube_router_cache"
exec 7>"$kube_router_cache/.lock"
[ -n "$link_only" ] || flock 7
cache_dir=$kube_router_cache build kube-router github.com/cloudnativelabs/kube-router/v2/cmd/kube-router@$kube_router_version 0 \
  -ldflags "-s -w -X github.com/cloudnativelabs/kube-router/v2/pkg/version.Version=$kube_router_version"
