#!/bin/sh
# Creates the Secret nats-credentials in plumb-system, once: a random
# password for each NATS user of deploy/nats/accounts.conf (publisher,
# notification, reader, alerts). The install does not ship it, so that no
# password is ever known in advance or reset by applying deploy/ again.
#
#   deploy/nats/credentials.sh            # before or after kubectl apply -k deploy/
#   NAMESPACE=other deploy/nats/credentials.sh
#
# It never replaces an existing Secret. To rotate a password, change that
# key of the Secret and restart NATS (kubectl -n plumb-system rollout
# restart statefulset/nats): the controllers read their mounted password
# file again on every reconnect. Needs kubectl and /dev/urandom.
set -eu

ns=${NAMESPACE:-plumb-system}
if kubectl -n "$ns" get secret nats-credentials >/dev/null 2>&1; then
	echo "secret $ns/nats-credentials exists; nothing to do"
	exit 0
fi
kubectl get namespace "$ns" >/dev/null 2>&1 || kubectl create namespace "$ns"

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
umask 077
for user in publisher notification reader alerts; do
	# 32 random bytes, as 64 hex characters: no quoting issues anywhere.
	od -An -N32 -tx1 /dev/urandom | tr -d ' \n' >"$dir/$user"
done
# From files, so the passwords never appear on a command line.
kubectl -n "$ns" create secret generic nats-credentials \
	--from-file=publisher="$dir/publisher" \
	--from-file=notification="$dir/notification" \
	--from-file=reader="$dir/reader" \
	--from-file=alerts="$dir/alerts"
kubectl -n "$ns" label secret nats-credentials app.kubernetes.io/part-of=plumb app.kubernetes.io/name=nats
