#!/usr/bin/env bash
# Builds the helm CLI that `make bench-helm` compares pkg/helmrender with,
# from the Go module pinned in hack/tools/helm (the same SDK version as
# pkg/go.mod), and links it into bin/. The binary lives in a cache folder
# outside the clone, keyed by version, like the control plane's
# (hack/controlplane.sh): a fresh clone on a machine that built it once
# links it in a second instead of building for minutes.
#
# usage: hack/helm.sh <bin-dir>
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
bin_dir=$(mkdir -p "$1" && cd "$1" && pwd)

helm_version=$(awk '$1 == "require" && $2 == "helm.sh/helm/v4" { print $3 }' "$here/tools/helm/go.mod")
[ -n "$helm_version" ] || { echo "hack/tools/helm/go.mod pins no helm.sh/helm/v4" >&2; exit 2; }
cache_root=${PLUMB_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/plumb}
cache_dir="$cache_root/tools/helm-$helm_version-$(go env GOOS)-$(go env GOARCH)"
mkdir -p "$cache_dir"
# One build at a time per cache folder, across clones and parallel makes.
exec 9>"$cache_dir/.lock"
flock 9

if [ ! -x "$cache_dir/helm" ]; then
  echo ">> building helm $helm_version into $cache_dir; the first build takes several minutes on 2 cores"
  start=$(date +%s)
  # No -ldflags: the CLI then reports the SDK's own version values, as
  # pkg/helmrender does (.Capabilities.HelmVersion is the same on both sides).
  (cd "$here/tools/helm" && GOWORK=off go build -o "$cache_dir/helm.tmp" helm.sh/helm/v4/cmd/helm)
  mv "$cache_dir/helm.tmp" "$cache_dir/helm"
  echo ">> built helm in $(( $(date +%s) - start ))s"
fi
ln -sf "$cache_dir/helm" "$bin_dir/helm"
