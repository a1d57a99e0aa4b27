package notifier

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	notificationv1 "plumb.dev/api/notification/v1"
	"plumb.dev/pkg/events"
)

func testEvent() events.Event {
	return events.Event{
		SchemaVersion:  events.SchemaVersion,
		ID:             "0b7d2a9c",
		InvolvedObject: events.ObjectReference{APIVersion: "kustomize.plumb.dev/v1", Kind: "Kustomization", Namespace: "apps", Name: "web"},
		Severity:       events.SeverityError,
		Reason:         kustomizev1.DriftDetectedReason,
		Message:        "1 object drifted from Git",
		Revision:       "main@sha1:4f3c2b1a",
		Metadata:       map[string]string{"summary": "prod", "cluster": "eu-1"},
		Changes: []events.Change{
			{Object: "Deployment/apps/web", Path: "spec.replicas", Before: "3", After: "2", Manager: "kubectl-edit"},
		},
		Timestamp:           time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC),
		ReportingController: "sync-controller",
	}
}

// TestPayloads compares each provider's rendering of one event with a
// golden file in testdata/ (run with UPDATE=1 to rewrite them).
func TestPayloads(t *testing.T) {
	for _, typ := range []string{
		notificationv1.SlackProvider, notificationv1.DiscordProvider, notificationv1.MSTeamsProvider,
		notificationv1.GenericProvider, notificationv1.GenericHMACProvider,
	} {
		t.Run(typ, func(t *testing.T) {
			g := NewWithT(t)
			var got []byte
			var header http.Header
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				got, _ = io.ReadAll(r.Body)
				header = r.Header.Clone()
			}))
			defer srv.Close()
			n, err := New(Config{Type: typ, Address: srv.URL, Channel: "#ops", Username: "plumb", Token: "key"})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(n.Post(context.Background(), testEvent())).To(Succeed())

			var pretty map[string]any
			g.Expect(json.Unmarshal(got, &pretty)).To(Succeed())
			out, _ := json.MarshalIndent(pretty, "", "  ")
			golden := filepath.Join("testdata", typ+".json")
			if os.Getenv("UPDATE") != "" {
				g.Expect(os.WriteFile(golden, append(out, '\n'), 0o644)).To(Succeed())
			}
			want, err := os.ReadFile(golden)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(string(out) + "\n").To(Equal(string(want)))

			switch typ {
			case notificationv1.GenericHMACProvider:
				g.Expect(header.Get(SignatureHeader)).To(Equal(Sign("key", got)))
				g.Expect(header.Get("Authorization")).To(BeEmpty())
			default:
				g.Expect(header.Get("Authorization")).To(Equal("Bearer key"))
			}
		})
	}
}

// TestErrors: which answers are retried, and that no error shows the
// address (webhook URLs are credentials) or the endpoint's answer, only
// its status code.
func TestErrors(t *testing.T) {
	for _, tc := range []struct {
		code      int
		permanent bool
	}{
		{http.StatusBadRequest, true},
		{http.StatusNotFound, true},
		{http.StatusForbidden, true},
		{http.StatusRequestTimeout, false},
		{http.StatusTooManyRequests, false},
		{http.StatusInternalServerError, false},
		{http.StatusBadGateway, false},
	} {
		t.Run(http.StatusText(tc.code), func(t *testing.T) {
			g := NewWithT(t)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				http.Error(w, "no such hook, ask admin@evil.example", tc.code)
			}))
			defer srv.Close()
			n, err := New(Config{Type: notificationv1.SlackProvider, Address: srv.URL + "/services/SECRET"})
			g.Expect(err).NotTo(HaveOccurred())
			err = n.Post(context.Background(), testEvent())
			g.Expect(err).To(HaveOccurred())
			g.Expect(IsPermanent(err)).To(Equal(tc.permanent))
			g.Expect(err.Error()).To(Equal(fmt.Sprintf("the slack endpoint answered %d %s", tc.code, http.StatusText(tc.code))))
			g.Expect(err.Error()).NotTo(ContainSubstring("SECRET"))
		})
	}

	// The reason phrase of the status line is the endpoint's text too.
	t.Run("reason phrase", func(t *testing.T) {
		g := NewWithT(t)
		l, err := net.Listen("tcp", "127.0.0.1:0")
		g.Expect(err).NotTo(HaveOccurred())
		defer l.Close()
		go func() {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close()
			_, _ = http.ReadRequest(bufio.NewReader(c))
			_, _ = io.WriteString(c, "HTTP/1.1 400 Visit evil.example for help\r\nContent-Length: 4\r\nConnection: close\r\n\r\nbody")
		}()
		n, _ := New(Config{Type: notificationv1.GenericProvider, Address: "http://" + l.Addr().String()})
		err = n.Post(context.Background(), testEvent())
		g.Expect(err).To(MatchError("the generic endpoint answered 400 Bad Request"))
	})

	t.Run("unreachable", func(t *testing.T) {
		g := NewWithT(t)
		srv := httptest.NewServer(http.NotFoundHandler())
		addr := srv.URL
		srv.Close()
		n, _ := New(Config{Type: notificationv1.GenericProvider, Address: addr + "/hook?token=SECRET"})
		err := n.Post(context.Background(), testEvent())
		g.Expect(err).To(HaveOccurred())
		g.Expect(IsPermanent(err)).To(BeFalse())
		// The dial error names host and port, which helps and is no
		// secret; the path and query, where webhook credentials live, stay out.
		g.Expect(err.Error()).NotTo(ContainSubstring("SECRET"))
		g.Expect(err.Error()).NotTo(ContainSubstring("/hook"))
	})

	t.Run("timeout", func(t *testing.T) {
		g := NewWithT(t)
		block := make(chan struct{})
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-block }))
		defer srv.Close()
		defer close(block)
		n, _ := New(Config{Type: notificationv1.GenericProvider, Address: srv.URL})
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		err := n.Post(ctx, testEvent())
		g.Expect(err).To(MatchError(ContainSubstring("deadline exceeded")))
		g.Expect(IsPermanent(err)).To(BeFalse())
	})
}

func TestNewRejects(t *testing.T) {
	for name, cfg := range map[string]Config{
		"unknown type":           {Type: "pager"},
		"generic-hmac, no token": {Type: notificationv1.GenericHMACProvider, Address: "http://x"},
		"nats without a subject": {Type: notificationv1.NATSProvider, Address: "nats://x"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := New(cfg)
			NewWithT(t).Expect(err).To(HaveOccurred())
		})
	}
}

func TestDriftIsBounded(t *testing.T) {
	g := NewWithT(t)
	var changes []events.Change
	for i := range 25 {
		changes = append(changes, events.Change{Object: "ConfigMap/ns/c", Path: "data.k" + string(rune('a'+i))})
	}
	text := driftText(changes)
	g.Expect(strings.Count(text, "\n")).To(Equal(maxDriftLines))
	g.Expect(text).To(HaveSuffix("… and 15 more"))
}
