package v2

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestGetReleaseName(t *testing.T) {
	long := strings.Repeat("a", 30)
	cases := []struct {
		name, target, release, want string
	}{
		{name: "app", want: "app"},
		{name: "app", target: "prod", want: "prod-app"},
		{name: "app", target: "prod", release: "custom", want: "custom"},
		// 30 + 1 + 30 = 61 characters: shortened to 40 + "-" + 12 hex digits.
		{name: long, target: long, want: long + "-" + strings.Repeat("a", 9) + "-9fc7f9602247"},
	}
	for _, c := range cases {
		hr := &HelmRelease{ObjectMeta: metav1.ObjectMeta{Name: c.name}, Spec: HelmReleaseSpec{TargetNamespace: c.target, ReleaseName: c.release}}
		got := hr.GetReleaseName()
		if got != c.want {
			t.Errorf("%s/%s/%s: got %q, want %q", c.name, c.target, c.release, got, c.want)
		}
		if len(got) > maxReleaseName {
			t.Errorf("%q is longer than %d characters", got, maxReleaseName)
		}
	}
}
