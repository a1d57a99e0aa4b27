package textbudget

import (
	"errors"
	"strings"
	"testing"
	"text/template"
	"time"
)

func run(t *testing.T, text string, data any, limit int) (string, error) {
	t.Helper()
	tmpl, err := template.New("t").Funcs(Funcs).Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	return NewRunner(1, 10*time.Second).Execute(tmpl, data, limit, 1<<10)
}

func TestFunctionsBuildWithinTheBudget(t *testing.T) {
	for text, want := range map[string]string{
		`{{ $x := . }}` + strings.Repeat(`{{ $x = print $x $x }}`, 12): "builds more than 1024 bytes",
		`{{ printf "%999d" 1 }}`:                                    "at most 256",
		`{{ . | replace "a" "` + strings.Repeat("b", 2000) + `" }}`: "builds more than 1024 bytes",
	} {
		_, err := run(t, text, "abc", 1<<20)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%.50s: got %v, want %q", text, err, want)
		}
	}
	got, err := run(t, `{{ . | upper }} {{ . | truncate 2 }} {{ "main@sha1:0123456789abcdef" | shortRevision }}`, "abc", 1<<20)
	if err != nil || got != "ABC a… main@sha1:0123456" {
		t.Errorf("got %q, %v", got, err)
	}
}

func TestOutputPastTheLimitIsAnError(t *testing.T) {
	_, err := run(t, `{{ . }}{{ . }}`, strings.Repeat("x", 600), 1000)
	if !errors.Is(err, ErrTooLong) || !strings.Contains(err.Error(), "more than 1000 bytes") {
		t.Errorf("got %v, want ErrTooLong", err)
	}
}
