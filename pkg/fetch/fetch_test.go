package fetch

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/http/httptest"
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
