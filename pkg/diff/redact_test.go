package diff

import (
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
)

func TestRedactorHidesFieldsThatHoldASecretValue(t *testing.T) {
	changes := []Change{
		// The desired value is the secret itself.
		{Path: "spec.template.spec.containers[0].env[0].value", Before: `"old-password"`, After: `"s3cr3t-pw"`},
		// The secret inside a longer value, on the live side only.
		{Path: "data.url", Before: `"postgres://app:s3cr3t-pw@db"`, After: `"postgres://app@db"`},
		// A field added by the foreign writer (no desired value).
		{Path: "data.copy", Before: `"s3cr3t-pw"`},
		// A secret value with a quote, as JSON text escapes it.
		{Path: "data.quoted", After: `"say \"hi\" now"`},
		// A map key substituted from a Secret.
		{Path: `metadata.labels["s3cr3t-pw"]`, After: `"x"`},
		// Nothing secret, nor a value shorter than MinRedactLen ("abc").
		{Path: "spec.replicas", Before: "3", After: "1"},
		{Path: "data.short", Before: `"abcd-not"`, After: `"xabcx"`},
	}
	r := NewRedactor([]string{"s3cr3t-pw", `say "hi" now`, "abc"})
	got := r.Changes(changes)
	NewWithT(t).Expect(got).To(Equal([]Change{
		{Path: "spec.template.spec.containers[0].env[0].value", Before: Redacted, After: Redacted},
		{Path: "data.url", Before: Redacted, After: Redacted},
		{Path: "data.copy", Before: Redacted},
		{Path: "data.quoted", After: Redacted},
		{Path: `metadata.labels["<redacted>"]`, After: `"x"`},
		{Path: "spec.replicas", Before: "3", After: "1"},
		{Path: "data.short", Before: `"abcd-not"`, After: `"xabcx"`},
	}))
	NewWithT(t).Expect(changes[0].After).To(Equal(`"s3cr3t-pw"`), "the input was modified")
}

func TestRedactAllHidesEveryValue(t *testing.T) {
	got := RedactAll().Changes([]Change{{Path: "spec.replicas", Before: "3", After: "1"}, {Path: "data.new", After: `"v"`}})
	NewWithT(t).Expect(got).To(Equal([]Change{{Path: "spec.replicas", Before: Redacted, After: Redacted}, {Path: "data.new", After: Redacted}}))
}

func TestANilRedactorChangesNothing(t *testing.T) {
	var r *Redactor
	changes := []Change{{Path: "spec.replicas", Before: "3", After: "1"}}
	NewWithT(t).Expect(r.Changes(changes)).To(Equal(changes))
	NewWithT(t).Expect(NewRedactor(nil).Changes(changes)).To(Equal(changes))
}

func ExampleRedactor() {
	r := NewRedactor([]string{"hunter22"})
	for _, c := range r.Changes([]Change{
		{Path: "spec.template.spec.containers[0].env[0].value", Before: `"oops"`, After: `"hunter22"`},
		{Path: "spec.replicas", Before: "3", After: "1"},
	}) {
		fmt.Println(c.Path, c.Before, "→", c.After)
	}
	// Output:
	// spec.template.spec.containers[0].env[0].value "<redacted>" → "<redacted>"
	// spec.replicas 3 → 1
}
