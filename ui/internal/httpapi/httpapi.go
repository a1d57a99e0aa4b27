// Package httpapi is how every handler of the UI's /api/ reads a request
// body and writes an answer, so that all of them bound what they read and
// speak the same JSON: a value, or {"error": "..."} with the status the API
// server gave (a 403 from Kubernetes stays a 403 for the browser).
package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// APITimeout bounds the API server calls one request makes for its user:
// a user's rest.Config has no timeout of its own, and a handler waiting
// on an API server that does not answer would hold its connection and
// goroutine until the client gave up. (The object pages use the same.)
const APITimeout = 30 * time.Second

// WithAPITimeout is r's context bounded by timeout (APITimeout in the
// server; tests shorten it), for the API calls of one request.
func WithAPITimeout(r *http.Request, timeout time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), timeout)
}

// MaxBody is the most bytes of a request body any handler reads: every
// body the UI takes is a small JSON object.
const MaxBody = 1 << 20

// ErrorBody is the JSON of every failed request.
type ErrorBody struct {
	Error string `json:"error"`
}

// JSON writes v with status.
func JSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// Error writes {"error": message} with status.
func Error(w http.ResponseWriter, status int, format string, args ...any) {
	JSON(w, status, ErrorBody{Error: fmt.Sprintf(format, args...)})
}

// APIError writes err as the answer: an API server error with its own
// status code and message, anything else as a 500.
func APIError(w http.ResponseWriter, err error) {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		if code := int(status.Status().Code); code >= 400 && code < 600 {
			JSON(w, code, ErrorBody{Error: err.Error()})
			return
		}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		JSON(w, http.StatusGatewayTimeout, ErrorBody{Error: "the API server did not answer in time"})
		return
	}
	JSON(w, http.StatusInternalServerError, ErrorBody{Error: err.Error()})
}

// Decode reads the request body, at most MaxBody bytes, as JSON into v.
// On failure it has written the answer (400, or 413 for a body too big)
// and returns false. An empty body leaves v as it is.
func Decode(w http.ResponseWriter, r *http.Request, v any) bool {
	body := http.MaxBytesReader(w, r.Body, MaxBody)
	dec := json.NewDecoder(body)
	if err := dec.Decode(v); err != nil {
		var tooBig *http.MaxBytesError
		switch {
		case errors.As(err, &tooBig):
			Error(w, http.StatusRequestEntityTooLarge, "the request body is larger than %d bytes", MaxBody)
			return false
		case errors.Is(err, io.EOF):
			return true
		}
		Error(w, http.StatusBadRequest, "the request body is not the JSON expected: %v", err)
		return false
	}
	return true
}
