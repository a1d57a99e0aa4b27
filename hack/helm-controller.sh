#!/usr/bin/env bash
# Builds Flux's helm-controller, the program `make bench-helmrelease`
# measures Plumb's HelmRelease against, from its Go module, and links it
# and Flux's CRDs of the same version into bin/.
#
# The module carries replace directives (./api, go-digest), which
# `go install pkg@version` refuses, so its source is copied out of the
# module cache and built in place, once: the binary, the source and the
# CRDs live in a cache folder outside the clone keyed by version, like
# hack/helm.sh's helm CLI. HELM_CONTROLLER_VERSION is the newest release
# the Go module proxy serves that this repository's Go (go.work) builds;
# the source-controller version whose CRDs go with it (the ExternalArtifact
# the bench hands helm-controller its chart through) is the one the
# helm-controller module requires for its source API.
#
# usage: hack/helm-controller.sh <bin-dir>
#   bin/helm-controller          the binary
#   bin/helm-controller-crds/    HelmRelease's CRD; source-controller's
#                                ExternalArtifact, HelmChart and OCIRepository CRDs
set -euo pipefail

bin_dir=$(mkdir -p "$1" && cd "$1" && pwd)
version=${HELM_CONTROLLER_VERSION:-v1.6.4}
module=github.com/fluxcd/helm-controller

cache_root=${PLUMB_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/plumb}
cache_dir="$cache_root/tools/helm-controller-$version-$(go env GOOS)-$(go env GOARCH)"
mkdir -p "$cache_dir"
# One build at a time per cache folder, across clones and parallel makes.
exec 9>"$cache_dir/.lock"
flock 9

# module_dir downloads a module version into the module cache (the proxy
# serves exact versions) and prints its folder there.
module_dir() {
  local json dir
  json=$(cd "$cache_dir" && GOWORK=off GOFLAGS=-mod=mod go mod download -json "$1@$2")
  dir=$(printf '%s\n' "$json" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  [ -n "$dir" ] && [ -d "$dir" ] || { echo "go mod download $1@$2: $json" >&2; exit 2; }
  printf '%s\n' "$dir"
}

# require_version prints the version of a module that go.mod requires.
require_version() {
  local v
  v=$(awk -v m="$1" '$1 == m { print $2 }' "$2")
  [ -n "$v" ] || { echo "$2 requires no $1" >&2; exit 2; }
  printf '%s\n' "$v"
}

if [ ! -x "$cache_dir/helm-controller" ]; then
  src_mod=$(module_dir "$module" "$version")
  rm -rf "$cache_dir/src"
  cp -r "$src_mod" "$cache_dir/src"
  # The module cache is read-only; the build writes nothing into the
  # source, but a later rm -rf of the cache must be able to remove it.
  chmod -R u+w "$cache_dir/src"
  # The api folder is a module of its own, left out of the main module's
  # zip: the replace directive `=> ./api` needs it put back.
  api_mod=$(module_dir "$module/api" "$(require_version "$module/api" "$cache_dir/src/go.mod")")
  rm -rf "$cache_dir/src/api"
  cp -r "$api_mod" "$cache_dir/src/api"
  chmod -R u+w "$cache_dir/src/api"

  echo ">> building helm-controller $version into $cache_dir; the first build takes several minutes on 2 cores"
  start=$(date +%s)
  (cd "$cache_dir/src" && GOWORK=off GOFLAGS=-mod=mod go build -trimpath -o "$cache_dir/helm-controller.tmp" .)
  mv "$cache_dir/helm-controller.tmp" "$cache_dir/helm-controller"
  echo ">> built helm-controller in $(( $(date +%s) - start ))s"
fi

# Flux's CRDs of the same versions: HelmRelease from helm-controller's
# module; from source-controller's (the version helm-controller's go.mod
# requires for its source API) ExternalArtifact, which the bench gives
# helm-controller its chart through, and HelmChart and OCIRepository,
# which helm-controller watches whatever chartRef says (it does not start
# without their CRDs).
if [ ! -f "$cache_dir/crds/VERSIONS" ]; then
  src_mod=$(module_dir "$module" "$version")
  source_version=$(require_version github.com/fluxcd/source-controller/api "$src_mod/go.mod")
  source_mod=$(module_dir github.com/fluxcd/source-controller "$source_version")
  rm -rf "$cache_dir/crds" "$cache_dir/crds.tmp"
  mkdir -p "$cache_dir/crds.tmp"
  cp "$src_mod/config/crd/bases/"*.yaml "$cache_dir/crds.tmp/"
  for kind in externalartifacts helmcharts ocirepositories; do
    cp "$source_mod/config/crd/bases/source.toolkit.fluxcd.io_$kind.yaml" "$cache_dir/crds.tmp/"
  done
  chmod u+w "$cache_dir/crds.tmp/"*
  printf '%s\n%s\n' "helm-controller $version" "source-controller $source_version" >"$cache_dir/crds.tmp/VERSIONS"
  mv "$cache_dir/crds.tmp" "$cache_dir/crds"
fi
ln -sf "$cache_dir/helm-controller" "$bin_dir/helm-controller"
ln -sfn "$cache_dir/crds" "$bin_dir/helm-controller-crds"
