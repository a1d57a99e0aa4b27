package fetch

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync/atomic"
	"testing"

	. "github.com/onsi/gomega"
)

func digestOf(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func TestBytes(t *testing.T) {
	body := []byte("apiVersion: v1\nkind: ConfigMap\n")
	var failuresLeft atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/flaky":
			if failuresLeft.Add(-1) >= 0 {
				http.Error(w, "busy", http.StatusServiceUnavailable)
				return
			}
			w.Write(body)
		case "/ok":
			w.Write(body)
		case "/big":
			w.Write(make([]byte, 2048))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	fast := Options{Backoff: 1}

	t.Run("verified body", func(t *testing.T) {
		g := NewWithT(t)
		got, err := Bytes(context.Background(), srv.URL+"/ok", digestOf(body), fast)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got).To(Equal(body))
	})
	t.Run("server errors are retried", func(t *testing.T) {
		g := NewWithT(t)
		failuresLeft.Store(2)
		got, err := Bytes(context.Background(), srv.URL+"/flaky", digestOf(body), fast)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got).To(Equal(body))
	})
	t.Run("gives up after the attempts", func(t *testing.T) {
		g := NewWithT(t)
		failuresLeft.Store(10)
		_, err := Bytes(context.Background(), srv.URL+"/flaky", digestOf(body), Options{Backoff: 1, Attempts: 3})
		g.Expect(err).To(MatchError(ContainSubstring("503")))
		g.Expect(failuresLeft.Load()).To(Equal(int32(7)), "three attempts")
	})
	t.Run("digest mismatch", func(t *testing.T) {
		g := NewWithT(t)
		_, err := Bytes(context.Background(), srv.URL+"/ok", digestOf([]byte("other")), fast)
		var mismatch *DigestMismatchError
		g.Expect(errors.As(err, &mismatch)).To(BeTrue())
		g.Expect(err.Error()).To(ContainSubstring("refusing a tampered or partial artifact"))
	})
	t.Run("not found is not retried", func(t *testing.T) {
		g := NewWithT(t)
		_, err := Bytes(context.Background(), srv.URL+"/gone", digestOf(body), fast)
		g.Expect(err).To(MatchError(ContainSubstring("404")))
	})
	t.Run("oversized body", func(t *testing.T) {
		g := NewWithT(t)
		_, err := Bytes(context.Background(), srv.URL+"/big", digestOf(body), Options{MaxSize: 1024, Backoff: 1})
		g.Expect(err).To(MatchError(ContainSubstring("over the limit")))
		g.Expect(errors.Is(err, ErrTooLarge)).To(BeTrue())
	})
	t.Run("malformed digest", func(t *testing.T) {
		g := NewWithT(t)
		_, err := Bytes(context.Background(), srv.URL+"/ok", "md5:abc", fast)
		g.Expect(err).To(MatchError(ContainSubstring("not sha256")))
	})
}

// bodyTransport answers every request with body, announcing its length
// when announced is set: a download without a server, so that what Bytes
// allocates is all its own.
type bodyTransport struct {
	body      []byte
	announced bool
}

func (b bodyTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	length := int64(-1)
	if b.announced {
		length = int64(len(b.body))
	}
	return &http.Response{StatusCode: http.StatusOK, Status: "200 OK", ContentLength: length,
		Body: io.NopCloser(bytes.NewReader(b.body)), Request: req}, nil
}

// A body of announced length is read into one buffer of its size: the
// bytes allocated for a 4 MiB artifact stay near 4 MiB, where growing the
// buffer from 512 bytes allocates about twice that (as a body of unknown
// length still does).
func TestBytesReadsAnAnnouncedBodyIntoOneBuffer(t *testing.T) {
	body := bytes.Repeat([]byte("apiVersion: v1\nkind: ConfigMap\n"), 4<<20/31)
	digest := digestOf(body)
	allocated := func(announced bool) uint64 {
		opts := Options{Client: &http.Client{Transport: bodyTransport{body: body, announced: announced}}}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		got, err := Bytes(context.Background(), "http://artifacts.example/a.yaml", digest, opts)
		runtime.ReadMemStats(&after)
		g := NewWithT(t)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got).To(Equal(body))
		return after.TotalAlloc - before.TotalAlloc
	}
	g := NewWithT(t)
	size := uint64(len(body))
	g.Expect(allocated(true)).To(BeNumerically("<", size+size/4), "announced")
	g.Expect(allocated(false)).To(BeNumerically(">", 3*size/2), "unknown length")
}
