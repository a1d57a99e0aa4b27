package renderfeed

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/go-logr/logr"
)

// Subscriber keeps one connection to a Feed and hands on what it reads.
type Subscriber struct {
	// URL is the feed's address, http://<render-controller's advertised
	// address>/renders; a record is used only when its artifact's URL is
	// under the same scheme and host.
	URL string
	// Client makes the request; nil is a client of its own without an
	// overall timeout (the stream has none: silence longer than three
	// heartbeats ends it instead).
	Client *http.Client
	// Handle is given each checked record, in order, from one goroutine.
	Handle func(Record)
	// Reset is called when a connection ends: what it delivered may have
	// been withdrawn while no connection was up, and the next one starts
	// with the snapshot.
	Reset func()
	// MinBackoff and MaxBackoff bound the wait before a reconnection,
	// doubled after each connection that delivered nothing; zero are 1s
	// and 30s.
	MinBackoff, MaxBackoff time.Duration
	Log                    logr.Logger
}

// Start reads the feed until ctx is done, reconnecting with a backoff.
func (s *Subscriber) Start(ctx context.Context) error {
	origin, err := Origin(s.URL)
	if err != nil {
		return err
	}
	minWait, maxWait := s.MinBackoff, s.MaxBackoff
	if minWait <= 0 {
		minWait = time.Second
	}
	if maxWait < minWait {
		maxWait = max(minWait, 30*time.Second)
	}
	wait := minWait
	for {
		got, err := s.read(ctx, origin)
		if s.Reset != nil {
			s.Reset()
		}
		if ctx.Err() != nil {
			return nil
		}
		if got {
			wait = minWait
		}
		s.Log.Info("the render feed's connection ended; reconnecting", "url", s.URL, "after", wait, "error", err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
		if !got {
			wait = min(2*wait, maxWait)
		}
	}
}

// NeedLeaderElection makes the manager run the subscriber on the leader
// only, the replica whose reconcilers write.
func (s *Subscriber) NeedLeaderElection() bool { return true }

// read makes one connection and reads it until it ends; got says whether
// it delivered a line.
func (s *Subscriber) read(ctx context.Context, origin string) (got bool, err error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL, nil)
	if err != nil {
		return false, err
	}
	c := s.Client
	if c == nil {
		c = &http.Client{Transport: &http.Transport{ResponseHeaderTimeout: 30 * time.Second}}
	}
	resp, err := c.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Errorf("GET %s: %s", s.URL, resp.Status)
	}
	silence := errors.New("the render feed sent nothing for three heartbeats")
	idle := time.AfterFunc(3*Heartbeat, func() { cancel(silence) })
	defer idle.Stop()
	br := bufio.NewReaderSize(resp.Body, MaxRecordBytes)
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			return got, fmt.Errorf("a render record of more than %d bytes", MaxRecordBytes)
		}
		if err != nil {
			if cause := context.Cause(ctx); cause != nil && errors.Is(cause, silence) {
				return got, cause
			}
			if errors.Is(err, io.EOF) {
				return got, io.ErrUnexpectedEOF
			}
			return got, err
		}
		idle.Reset(3 * Heartbeat)
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue // a heartbeat
		}
		got = true
		var rec Record
		if err := json.Unmarshal(line, &rec); err != nil {
			s.Log.Info("dropping a render record that is not JSON", "error", err.Error())
			continue
		}
		if err := rec.check(origin); err != nil {
			s.Log.Info("dropping a render record", "reason", err.Error())
			continue
		}
		if s.Handle != nil {
			s.Handle(rec)
		}
	}
}

// Origin is scheme://host of a feed's URL, under which the artifacts its
// records name must be.
func Origin(feedURL string) (string, error) {
	u, err := url.Parse(feedURL)
	if err != nil {
		return "", fmt.Errorf("the render feed's URL %q: %w", feedURL, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("the render feed's URL %q must be http:// or https:// with a host", feedURL)
	}
	return u.Scheme + "://" + u.Host, nil
}
