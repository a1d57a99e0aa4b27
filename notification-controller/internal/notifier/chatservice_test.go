package notifier

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
)

// chatService is an httptest server playing a chat service: handle validates
// a request as the service does and answers as it would. It records what
// it accepted.
type chatService struct {
	*httptest.Server
	mu   sync.Mutex
	got  []map[string]any
	seen []*http.Request
}

func newChatService(t *testing.T, handle func(w http.ResponseWriter, r *http.Request, body []byte) (accepted any)) *chatService {
	s := &chatService{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		accepted := handle(w, r, body)
		s.mu.Lock()
		defer s.mu.Unlock()
		s.seen = append(s.seen, r.Clone(r.Context()))
		if accepted != nil {
			var m map[string]any
			b, _ := json.Marshal(accepted)
			_ = json.Unmarshal(b, &m)
			s.got = append(s.got, m)
		}
	}))
	t.Cleanup(s.Close)
	return s
}

// accepted returns what the stand-in took, as JSON maps.
func (s *chatService) accepted() []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]map[string]any(nil), s.got...)
}

// strict decodes a JSON body refusing unknown fields and trailing data.
func strictJSON(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return io.ErrUnexpectedEOF
	}
	return nil
}

// reply writes a JSON answer.
func reply(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// expectPostFails posts the test event through cfg's notifier and checks
// the error's text and whether the dispatcher would retry it.
func expectPostFails(t *testing.T, cfg Config, want string, permanent bool) {
	t.Helper()
	g := NewWithT(t)
	n, err := New(cfg)
	g.Expect(err).NotTo(HaveOccurred())
	err = n.Post(context.Background(), testEvent())
	g.Expect(err).To(MatchError(want))
	g.Expect(IsPermanent(err)).To(Equal(permanent), "permanent")
	g.Expect(err.Error()).NotTo(ContainSubstring("SECRET"))
}
