package stream

import (
	"errors"
	"fmt"

	"github.com/go-logr/logr"
	"github.com/spf13/pflag"

	"plumb.dev/pkg/options"
)

const (
	// DefaultMaxEvents is how many events the Index keeps by default: a
	// few days of a busy cluster's drift and syncs.
	DefaultMaxEvents = 50_000
	// DefaultMaxBytes bounds the Index's events by their encoded size; at
	// the default count it allows about 1.3 KiB per event, more than a
	// typical one, so the count is what usually bounds it.
	DefaultMaxBytes = 64 << 20
	// MaxEventBytes is the largest event indexed. The controllers bound
	// an event to a few KiB (a 4 KiB message, changes of at most 1 KiB a
	// value); anything much larger did not come from them.
	MaxEventBytes = 256 << 10
)

// Config is how the Index reads the stream and how much of it it keeps.
type Config struct {
	// NATS is the server, its authentication and the stream name; only
	// URL, Auth and Stream are used (the stream's limits are the
	// publishers').
	NATS options.NATS
	// MaxEvents and MaxBytes bound the Index; zero means the default.
	MaxEvents int
	MaxBytes  int64
	// Log receives the connection's news (pkg/events.Conn) and skipped
	// events.
	Log logr.Logger
}

// BindFlags registers the Index's bounds. The NATS flags are the server's
// options.NATS (options.NATS.BindFlags: --nats-url, --nats-stream and the
// --nats-* authentication and TLS flags, spelled as the controllers'),
// given in Config.NATS.
func (c *Config) BindFlags(fs *pflag.FlagSet) {
	fs.IntVar(&c.MaxEvents, "events-max", DefaultMaxEvents,
		"The most events kept in memory for the event history and the drift timeline; the oldest go first.")
	fs.Int64Var(&c.MaxBytes, "events-max-bytes", DefaultMaxBytes,
		"The most bytes of events (as encoded on the stream) kept in memory; the oldest go first.")
}

// Validate reports values that cannot work.
func (c *Config) Validate() error {
	if c.MaxEvents < 0 || c.MaxBytes < 0 {
		return fmt.Errorf("--events-max (%d) and --events-max-bytes (%d) must not be negative", c.MaxEvents, c.MaxBytes)
	}
	if c.NATS.URL != "" && c.NATS.Stream == "" {
		return errors.New("--nats-stream must name the stream")
	}
	return c.NATS.Validate()
}

func (c *Config) withDefaults() Config {
	out := *c
	if out.MaxEvents == 0 {
		out.MaxEvents = DefaultMaxEvents
	}
	if out.MaxBytes == 0 {
		out.MaxBytes = DefaultMaxBytes
	}
	if out.Log.GetSink() == nil {
		out.Log = logr.Discard()
	}
	return out
}
