package main

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"plumb.dev/image-controller/internal/registry"
)

// The limits default to the registry package's, a limit below one is
// refused, and --allowed-private-networks is parsed before the manager
// starts, naming the flag in its error.
func TestFlagsAreCheckedBeforeStart(t *testing.T) {
	parse := func(args ...string) (imageOptions, error) {
		var o imageOptions
		fs := pflag.NewFlagSet("image-controller", pflag.ContinueOnError)
		o.BindFlags(fs)
		if err := fs.Parse(args); err != nil {
			return o, err
		}
		return o, o.Validate()
	}
	o, err := parse()
	if err != nil || o.MaxTags != registry.DefaultMaxTags || o.MaxTagPages != registry.DefaultMaxPages || o.MaxResponseSize != registry.DefaultMaxPageBytes {
		t.Errorf("defaults: %+v, %v", o, err)
	}
	if o, err := parse("--allowed-private-networks=127.0.0.0/8,::1"); err != nil || len(o.allowed) != 2 {
		t.Errorf("two networks: %v, %v", o.allowed, err)
	}
	for _, args := range [][]string{{"--max-tags=0"}, {"--max-tag-pages=-1"}, {"--max-response-size=0"}} {
		if _, err := parse(args...); err == nil || !strings.Contains(err.Error(), strings.SplitN(args[0], "=", 2)[0]) {
			t.Errorf("%v: %v", args, err)
		}
	}
	if _, err := parse("--allowed-private-networks=not-a-network"); err == nil || !strings.Contains(err.Error(), "--allowed-private-networks") {
		t.Errorf("a bad network: %v", err)
	}
}
