package version

import "testing"

func TestStringNamesVersionAndShortCommit(t *testing.T) {
	got := Info{Version: "v1.2.3", Commit: "0123456789abcdef0123"}.String()
	if want := "v1.2.3 (commit 0123456789ab)"; got != want {
		t.Fatalf("String() = %q, want %q", got, want)
	}
	if got := (Info{Version: "dev"}).String(); got != "dev" {
		t.Fatalf("String() without commit = %q, want dev", got)
	}
}

func TestGetPrefersTheLinkedCommit(t *testing.T) {
	old := Commit
	defer func() { Commit = old }()
	Commit = "feedface"
	if got := Get().Commit; got != "feedface" {
		t.Fatalf("Get().Commit = %q, want the linked feedface", got)
	}
}
