package config

import (
	"testing"
	"time"

	"github.com/spf13/pflag"
)

func TestDefaultsAreValid(t *testing.T) {
	var o Notification
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	o.BindFlags(fs)
	if err := fs.Parse([]string{"--rate-limit-interval=1m", "--receiver-addr=:9000"}); err != nil {
		t.Fatal(err)
	}
	if err := o.Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	if o.RateLimitInterval != time.Minute || o.ReceiverAddr != ":9000" {
		t.Fatalf("flags not bound: %+v", o)
	}
	for name, mutate := range map[string]func(*Notification){
		"no consumer":    func(o *Notification) { o.ConsumerName = "" },
		"short ack wait": func(o *Notification) { o.AckWait = time.Millisecond },
		"no workers":     func(o *Notification) { o.Workers = 0 },
		"negative retry": func(o *Notification) { o.Retries = -1 },
		"no timeout":     func(o *Notification) { o.MaxProviderTimeout = 0 },
		"no refresh":     func(o *Notification) { o.SecretRefreshInterval = 0 },
		"no rate":        func(o *Notification) { o.ReceiverRate = 0 },
		"no concurrency": func(o *Notification) { o.ReceiverMaxConcurrent = 0 },
		"no gcr issuer":  func(o *Notification) { o.GCRIssuer = "" },
		"gcr jwks file":  func(o *Notification) { o.GCRJWKSURL = "file:///etc/keys.json" },
	} {
		bad := o
		mutate(&bad)
		if bad.Validate() == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
