package cmd

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/pkg/events"
	"plumb.dev/pkg/options"
	"plumb.dev/pkg/testenv"
)

// publish stores evs on the embedded NATS through pkg/events' JetStream
// publisher, the one the controllers use, and waits until they are stored.
func publish(t *testing.T, evs ...events.Event) {
	t.Helper()
	p, err := events.NewJetStreamPublisher(options.NATS{
		URL: env.NATSURL, Stream: "PLUMB_EVENTS", StreamMaxAge: time.Hour, StreamMaxBytes: 64 << 20, QueueSize: 100,
		Auth: env.SecureNATS.Auth(testenv.NATSPublisher),
	}, "test-controller", logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		p.Publish(e)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

// natsFlags are the flags of `plumb events` as the reader user of
// deploy/nats/accounts.conf, and then extra.
func natsFlags(extra ...string) []string {
	a := env.SecureNATS.Auth(testenv.NATSReader)
	return append([]string{"--nats-url", env.NATSURL, "--nats-user", a.User, "--nats-password-file", a.PasswordFile,
		"--nats-ca-file", a.CAFile, "--nats-cert-file", a.CertFile, "--nats-key-file", a.KeyFile,
		"--nats-inbox-prefix", a.InboxPrefix}, extra...)
}

var eventTime = time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)

func event(kind, ns, name string, sev events.Severity, reason, msg string, at time.Duration) events.Event {
	return events.Event{
		SchemaVersion:       events.SchemaVersion,
		ID:                  events.NewID(),
		InvolvedObject:      events.ObjectReference{Kind: kind, Namespace: ns, Name: name},
		Severity:            sev,
		Reason:              reason,
		Message:             msg,
		Timestamp:           eventTime.Add(at),
		ReportingController: "test-controller",
	}
}

func TestEvents(t *testing.T) {
	_, ns := newNamespace(t)
	_, other := newNamespace(t)
	applied := event("Kustomization", ns, "app", events.SeverityInfo, kustomizev1.AppliedReason, "applied 3 objects", 0)
	applied.Revision = "main@sha1:7777777"
	failed := event("GitRepository", ns, "repo", events.SeverityError, sourcev1.GitOperationFailedReason, "authentication required", time.Second)
	drift := event("Kustomization", ns, "app", events.SeverityInfo, kustomizev1.DriftCorrectedReason, "reverted a foreign change", 2*time.Second)
	drift.Changes = []events.Change{{Object: "ConfigMap/" + ns + "/settings", Path: "data.mode", Before: `"slow"`, After: `"fast"`, Manager: "kubectl-edit"}}
	elsewhere := event("Kustomization", other, "app", events.SeverityInfo, kustomizev1.AppliedReason, "applied elsewhere", 3*time.Second)
	publish(t, applied, failed, drift, elsewhere)

	line := func(ts, sev, obj, reason, msg string) string {
		return ts + "  " + sev + "  " + obj + "  " + reason + "  " + msg
	}
	appliedLine := line("2026-11-25T10:00:00Z", "info ", "Kustomization/"+ns+"/app", kustomizev1.AppliedReason, "applied 3 objects") + "  (main@sha1:7777777)"
	failedLine := line("2026-11-25T10:00:01Z", "error", "GitRepository/"+ns+"/repo", sourcev1.GitOperationFailedReason, "authentication required")
	driftLines := []string{
		line("2026-11-25T10:00:02Z", "info ", "Kustomization/"+ns+"/app", kustomizev1.DriftCorrectedReason, "reverted a foreign change"),
		`    ConfigMap/` + ns + `/settings data.mode: "slow" → "fast"  (by kubectl-edit)`,
	}
	elsewhereLine := line("2026-11-25T10:00:03Z", "info ", "Kustomization/"+other+"/app", kustomizev1.AppliedReason, "applied elsewhere")

	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"one object", []string{"--for", "Kustomization/app", "-n", ns}, append([]string{appliedLine}, driftLines...)},
		{"kind is case-insensitive", []string{"--for", "kustomization/app", "-n", ns}, append([]string{appliedLine}, driftLines...)},
		{"one namespace", []string{"-n", ns}, append([]string{appliedLine, failedLine}, driftLines...)},
		{"nothing matches", []string{"--for", "Kustomization/none", "-n", ns}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			r := plumb(append([]string{"events"}, natsFlags(tc.args...)...)...)
			g.Expect(r.code).To(Equal(ExitOK), r.String())
			g.Expect(lines(r.out)).To(Equal(tc.want))
		})
	}

	t.Run("every namespace", func(t *testing.T) {
		g := NewWithT(t)
		r := plumb(append([]string{"events"}, natsFlags()...)...)
		g.Expect(r.code).To(Equal(ExitOK), r.String())
		all := lines(r.out)
		for _, want := range []string{appliedLine, failedLine, driftLines[0], elsewhereLine} {
			g.Expect(all).To(ContainElement(want))
		}
	})

	t.Run("follow", func(t *testing.T) {
		g := NewWithT(t)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		out, errOut := &syncBuffer{}, &syncBuffer{}
		code := make(chan int, 1)
		go func() {
			code <- Run(ctx, append([]string{"--kubeconfig", kubeconfig, "events"}, natsFlags("-f", "--for", "GitRepository/repo", "-n", ns)...), out, errOut)
		}()
		g.Eventually(out.String, 20*time.Second, 50*time.Millisecond).Should(ContainSubstring(failedLine))
		later := event("GitRepository", ns, "repo", events.SeverityInfo, sourcev1.NewArtifactReason, "stored artifact for main@sha1:8888888", time.Minute)
		publish(t, later)
		g.Eventually(out.String, 20*time.Second, 50*time.Millisecond).Should(ContainSubstring("NewArtifact  stored artifact for main@sha1:8888888"))
		cancel()
		g.Eventually(code, 20*time.Second).Should(Receive(Equal(ExitOK)))
		g.Expect(lines(out.String())).To(HaveLen(2), "only the object's events: "+out.String())
		g.Expect(errOut.String()).To(BeEmpty())
	})

	t.Run("errors", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			args []string
			want string
		}{
			{"bad --for", natsFlags("--for", "app"), "want Kind/name"},
			// The reader may read PLUMB_EVENTS only.
			{"another stream", natsFlags("--stream", "NOPE"), `refused this client: nats: permissions violation: Permissions Violation for Publish to "$JS.API.STREAM.INFO.NOPE"`},
			{"no credentials", []string{"--nats-url", env.NATSURL}, "refused this client: nats: tls error"},
			{"TLS but no user", []string{"--nats-url", env.NATSURL, "--nats-ca-file", env.SecureNATS.CAFile,
				"--nats-cert-file", env.SecureNATS.CertFile, "--nats-key-file", env.SecureNATS.KeyFile}, "refused this client: nats: Authorization Violation"},
			{"a password without a user", []string{"--nats-url", env.NATSURL, "--nats-password-file", env.SecureNATS.CAFile}, "--nats-user and --nats-password-file go together"},
			{"no NATS", []string{"--nats-url", "nats://127.0.0.1:1"}, "connecting to NATS"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				g := NewWithT(t)
				r := plumb(append([]string{"events"}, tc.args...)...)
				g.Expect(r.code).To(Equal(ExitError), r.String())
				g.Expect(r.errOut).To(ContainSubstring(tc.want))
				g.Expect(strings.TrimSpace(r.out)).To(BeEmpty())
			})
		}
	})
}
