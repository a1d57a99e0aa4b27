package render

import (
	"errors"
	"net/http"
	"os"
)

// ErrNetworkRefused is what any HTTP request through the process's default
// transport gets after LockDownProcess.
var ErrNetworkRefused = errors.New("outbound HTTP through the default transport is refused in a rendering process")

// refusingTransport answers every request with ErrNetworkRefused, without
// dialing.
type refusingTransport struct{}

func (refusingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
	return nil, ErrNetworkRefused
}

// LockDownProcess is the defence in depth behind the sandbox, for a
// process whose job is rendering (render-controller calls it first thing):
//
//   - http.DefaultTransport and http.DefaultClient refuse every request.
//     kustomize fetches remote files with a client on the default
//     transport, so a remote reference the sandbox missed fails without a
//     connection. Everything the process itself needs must use a client
//     with an explicit transport (client-go does once its config names a
//     proxy function; render-controller's downloads have their own).
//   - GIT_ALLOW_PROTOCOL names no protocol, so a `git clone` that kustomize
//     might run refuses every transport, file:// included.
//
// It changes process-wide state and is not undone.
func LockDownProcess() {
	http.DefaultTransport = refusingTransport{}
	http.DefaultClient = &http.Client{Transport: refusingTransport{}}
	_ = os.Setenv("GIT_ALLOW_PROTOCOL", "plumb-rendering-allows-none")
	_ = os.Setenv("GIT_TERMINAL_PROMPT", "0")
}

// defaultTransport is Go's default transport, taken before LockDownProcess
// can replace it.
var defaultTransport = http.DefaultTransport.(*http.Transport)

// NewTransport returns an HTTP transport of its own (not the default one)
// with the default transport's settings, for the downloads a rendering
// process does make.
func NewTransport() *http.Transport {
	return defaultTransport.Clone()
}
