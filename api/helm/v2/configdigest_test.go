package v2

import "testing"

func TestConfigDigestIgnoresKeyOrderAndTreatsNilAsEmpty(t *testing.T) {
	a := ConfigDigest(map[string]any{"b": 1, "a": map[string]any{"y": "2", "x": true}})
	b := ConfigDigest(map[string]any{"a": map[string]any{"x": true, "y": "2"}, "b": 1})
	if a != b {
		t.Errorf("the same values in another order: %s, then %s", a, b)
	}
	// sha256 of "{}".
	const empty = "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
	if got := ConfigDigest(nil); got != empty {
		t.Errorf("nil values: %s, want the digest of {} %s", got, empty)
	}
	if got := ConfigDigest(map[string]any{}); got != empty {
		t.Errorf("empty values: %s, want %s", got, empty)
	}
	if ConfigDigest(map[string]any{"b": 2}) == ConfigDigest(map[string]any{"b": 1}) {
		t.Error("two different values have one digest")
	}
}
