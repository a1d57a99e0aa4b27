package localenv

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// SlackMessage is what a Slack incoming webhook receives from a Provider of
// type slack: the fields Plumb sends.
type SlackMessage struct {
	Channel     string `json:"channel"`
	Username    string `json:"username"`
	Text        string `json:"text"`
	Attachments []struct {
		Color      string `json:"color"`
		AuthorName string `json:"author_name"`
		Title      string `json:"title"`
		Text       string `json:"text"`
		Footer     string `json:"footer"`
		Fields     []struct {
			Title string `json:"title"`
			Value string `json:"value"`
		} `json:"fields"`
	} `json:"attachments"`
	// Raw is the body as received.
	Raw string `json:"-"`
}

// String renders the message on a few lines, as a person would read it.
func (m SlackMessage) String() string {
	var b strings.Builder
	for _, a := range m.Attachments {
		fmt.Fprintf(&b, "[%s] %s %s: %s", m.Channel, a.AuthorName, a.Title, a.Text)
		for _, f := range a.Fields {
			fmt.Fprintf(&b, "\n    %s: %s", f.Title, strings.ReplaceAll(f.Value, "\n", "\n      "))
		}
	}
	if m.Text != "" {
		fmt.Fprintf(&b, "[%s] %s", m.Channel, m.Text)
	}
	return b.String()
}

// SlackSink stands in for Slack: an HTTP endpoint on 127.0.0.1 that answers
// "ok" like an incoming webhook, keeps every message and, when Print is
// set, prints what Slack would show.
type SlackSink struct {
	ln  net.Listener
	srv *http.Server

	mu       sync.Mutex
	messages []SlackMessage
	notify   chan struct{}
	print    io.Writer
}

func newSlackSink(print io.Writer) (*SlackSink, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &SlackSink{ln: ln, print: print, notify: make(chan struct{})}
	s.srv = &http.Server{Handler: http.HandlerFunc(s.serve), ReadHeaderTimeout: 10 * time.Second}
	go s.srv.Serve(ln) //nolint:errcheck // ends with Close
	return s, nil
}

// URL is the webhook address to give a Provider.
func (s *SlackSink) URL() string { return "http://" + s.ln.Addr().String() + "/services/local" }

// Close stops the endpoint.
func (s *SlackSink) Close() error { return s.srv.Close() }

func (s *SlackSink) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var m SlackMessage
	if err := json.Unmarshal(body, &m); err != nil {
		http.Error(w, "invalid_payload", http.StatusBadRequest)
		return
	}
	m.Raw = string(body)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.print != nil {
		fmt.Fprintf(s.print, "slack ▸ %s\n", m)
	}
	s.messages = append(s.messages, m)
	close(s.notify)
	s.notify = make(chan struct{})
	_, _ = io.WriteString(w, "ok")
}

// Messages returns the messages received so far, and a channel closed when
// the next one arrives.
func (s *SlackSink) Messages() ([]SlackMessage, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]SlackMessage(nil), s.messages...), s.notify
}
