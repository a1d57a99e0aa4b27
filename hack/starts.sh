#!/usr/bin/env bash
# `make starts`: starts the whole suite N times in a row (default 50) as
# `make run` does, each start bounded in time, and reports how many came up
# whole: every controller ready and the sample's objects Ready
# (plumb-local -exit-when-ready, which then stops every process and removes
# its state). A start that fails keeps its output in $out/start-<i>.log.
#
#   hack/starts.sh [N] [SECONDS_PER_START]     (defaults 50 and 300)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
n=${1:-50}
limit=${2:-300}

echo ">> building the four controllers, plumb-local and plumb into bin/"
make --no-print-directory controlplane-assets
go build -o "$root/bin/" ./source-controller ./render-controller ./sync-controller ./notification-controller ./e2e/cmd/plumb-local
go build -o "$root/bin/plumb" ./cli

out=$(mktemp -d "${TMPDIR:-/tmp}/plumb-starts-XXXXXX")
whole=0
failed=()
started=$SECONDS
for ((i = 1; i <= n; i++)); do
  log="$out/start-$i.log"
  t=$SECONDS
  # SIGTERM at the limit: plumb-local stops what it started; KILL 30s later.
  if timeout --kill-after=30 "$limit" "$root/bin/plumb-local" -root "$root" -exit-when-ready \
      -start-timeout "$((limit - 20))s" >"$log" 2>&1; then
    whole=$((whole + 1))
    ready=$(grep -o 'ready in [0-9.]*[a-z]*' "$log" | head -1)
    printf '   start %d/%d: whole (%s, %ds in all)\n' "$i" "$n" "${ready:-?}" $((SECONDS - t))
    rm -f "$log"
  else
    failed+=("$i")
    printf '   start %d/%d: FAILED after %ds; %s:\n' "$i" "$n" $((SECONDS - t)) "$log"
    grep -m1 -A8 'plumb-local:' "$log" | sed 's/^/      /' || tail -5 "$log" | sed 's/^/      /'
  fi
  # Every process of the start is gone before the next one.
  if leftover=$(pgrep -f "$root/bin/(source|render|sync|notification|image)-controller" 2>/dev/null); then
    echo "   start $i left processes running: $leftover" >&2
  fi
done
echo ">> $whole of $n starts came up whole in $(((SECONDS - started) / 60))m$(((SECONDS - started) % 60))s${failed:+; failed: ${failed[*]} (logs in $out)}"
[[ ${#failed[@]} -eq 0 ]] && rmdir "$out" 2>/dev/null
((whole == n))
