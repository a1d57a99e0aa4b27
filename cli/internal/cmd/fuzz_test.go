package cmd

import (
	"strings"
	"testing"
)

// FuzzInClusterService: artifact URLs come from a status field anyone with
// write access to it can set; only <svc>.<ns>.svc[.cluster.local] may go to
// the service proxy, and the parts must be single DNS labels.
func FuzzInClusterService(f *testing.F) {
	for _, s := range []string{
		"render-controller.plumb-system.svc.cluster.local.", "a.b.svc", "a.b.svc.evil.com",
		"127.0.0.1", "", ".svc", "a..svc", "x.y.svc.cluster.local.extra",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, host string) {
		svc, ns, ok := inClusterService(host)
		if !ok {
			return
		}
		h := strings.TrimSuffix(host, ".")
		if !strings.HasPrefix(h, svc+"."+ns+".svc") || strings.Contains(svc, ".") || strings.Contains(ns, ".") {
			t.Fatalf("%q split into service %q, namespace %q", host, svc, ns)
		}
		rest := strings.TrimPrefix(h, svc+"."+ns+".svc")
		if rest != "" && rest != ".cluster.local" {
			t.Fatalf("%q accepted with trailing %q", host, rest)
		}
	})
}
