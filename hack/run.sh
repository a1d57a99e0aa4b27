#!/usr/bin/env bash
# `make run`: builds what is missing (the control plane from Go modules, the
# five controllers, the launcher), printing a heartbeat while the long first
# build runs, then starts the whole suite locally with e2e/cmd/plumb-local.
# Extra arguments go to plumb-local (e.g. -log-level=debug, -state-dir=DIR).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

# heartbeat LABEL CMD...: runs CMD and, every 20 seconds while it runs,
# prints how long it has been going, so a first build of several minutes
# never looks stuck.
heartbeat() {
  local label=$1; shift
  local start=$SECONDS
  "$@" &
  local pid=$!
  trap 'kill "$pid" 2>/dev/null; exit 130' INT TERM
  local next=20
  while kill -0 "$pid" 2>/dev/null; do
    sleep 1
    local t=$((SECONDS - start))
    if ((t >= next)) && kill -0 "$pid" 2>/dev/null; then
      printf '   … %s: %dm%02ds so far\n' "$label" $((t / 60)) $((t % 60))
      next=$((t + 20))
    fi
  done
  trap - INT TERM
  wait "$pid"
}

echo ">> make run: building what is missing (a fresh machine builds etcd, kube-apiserver and kube-controller-manager from Go modules once, about 10-15 minutes on 2 cores; later runs take seconds)"
heartbeat "control plane (etcd, kube-apiserver, kube-controller-manager)" make --no-print-directory controlplane-assets
echo ">> go build the five controllers and plumb-local into bin/"
# One go command for all six: the package graph is loaded once and the
# links run in parallel; unchanged binaries are not linked again.
heartbeat "go build" go build -o "$root/bin/" ./source-controller ./render-controller ./sync-controller ./notification-controller ./image-controller ./e2e/cmd/plumb-local
# The example config-management plugin, which the launcher runs beside
# render-controller for the sample's plugin part (docs/design/plugins.md);
# named so that it shadows no system envsubst.
heartbeat "go build the example plugin" go build -o "$root/bin/plumb-plugin-envsubst" ./pkg/renderplugin/example/envsubst
# The plumb CLI is handy next to it, but not needed to run.
go build -o "$root/bin/plumb" ./cli || echo "   (the plumb CLI did not build; running without it)"
# What runs the Pods (docs/design/node.md, "make run's node"): by default
# a real node when this machine can start one now, else the pod simulator,
# which plumb-local chooses and says why in one line. The default builds
# nothing of the node: it links what ~/.cache/plumb holds (seconds), so a
# fresh machine comes up as fast as ever, on the simulator. NODE=real
# builds the node (`make node-assets`) and fails if it cannot start;
# NODE=sim asks for the simulator.
case "${NODE:-}" in
  "" | auto)
    PLUMB_LINK_ONLY=1 hack/controlplane.sh "$root/bin/k8s" kubelet kube-proxy kube-scheduler
    PLUMB_LINK_ONLY=1 hack/node.sh "$root/bin/node"
    node_args=(-node auto) ;;
  sim | simulated) node_args=(-node simulated) ;;
  real)
    # kubelet, kube-proxy, kube-scheduler, containerd, runc and the CNI
    # plugins, from Go modules (cached like the control plane).
    heartbeat "a real node (kubelet, containerd, runc, CNI plugins)" make --no-print-directory node-assets
    node_args=(-node real) ;;
  *) echo "make run: NODE=$NODE: want NODE=sim or NODE=real (or no NODE: the real node when it can start here)" >&2; exit 2 ;;
esac
exec "$root/bin/plumb-local" -root "$root" "${node_args[@]}" "$@"
