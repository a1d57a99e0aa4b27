package policy

import (
	"errors"
	"testing"

	imagev1 "plumb.dev/api/image/v1"
)

func spec(c imagev1.ImagePolicyChoice, f *imagev1.TagFilter) imagev1.ImagePolicySpec {
	return imagev1.ImagePolicySpec{Policy: c, FilterTags: f}
}

// Each policy chooses what Flux's would among the same tags.
func TestPoliciesChooseAsFluxDoes(t *testing.T) {
	tags := []string{"1.0.0", "1.2.3", "v1.10.0", "2.0.0-rc.1", "2.0.0", "latest", "main-20240101-abc", "main-20231231-def", "3", "10"}
	for _, tc := range []struct {
		name string
		spec imagev1.ImagePolicySpec
		tags []string
		want string
	}{
		{"semver range", spec(imagev1.ImagePolicyChoice{SemVer: &imagev1.SemVerPolicy{Range: "^1"}}, nil), tags, "v1.10.0"},
		{"semver highest", spec(imagev1.ImagePolicyChoice{SemVer: &imagev1.SemVerPolicy{Range: ">=1.0.0"}}, nil), tags, "10"},
		{"semver prerelease only when asked", spec(imagev1.ImagePolicyChoice{SemVer: &imagev1.SemVerPolicy{Range: ">=2.0.0-0 <2.0.0"}}, nil), tags, "2.0.0-rc.1"},
		{"alphabetical asc", spec(imagev1.ImagePolicyChoice{Alphabetical: &imagev1.AlphabeticalPolicy{}}, nil), tags, "v1.10.0"},
		{"alphabetical desc", spec(imagev1.ImagePolicyChoice{Alphabetical: &imagev1.AlphabeticalPolicy{Order: "desc"}}, nil), tags, "1.0.0"},
		{"numerical asc", spec(imagev1.ImagePolicyChoice{Numerical: &imagev1.NumericalPolicy{Order: "asc"}}, &imagev1.TagFilter{Pattern: `^[0-9]+$`}), tags, "10"},
		{"numerical desc", spec(imagev1.ImagePolicyChoice{Numerical: &imagev1.NumericalPolicy{Order: "desc"}}, &imagev1.TagFilter{Pattern: `^[0-9]+$`}), tags, "3"},
		{"extract orders by the timestamp", spec(imagev1.ImagePolicyChoice{Numerical: &imagev1.NumericalPolicy{}},
			&imagev1.TagFilter{Pattern: `^main-(?P<ts>[0-9]+)-[a-z]+$`, Extract: "$ts"}), tags, "main-20240101-abc"},
		{"extract with alphabetical desc", spec(imagev1.ImagePolicyChoice{Alphabetical: &imagev1.AlphabeticalPolicy{Order: "desc"}},
			&imagev1.TagFilter{Pattern: `^main-[0-9]+-(?P<sha>[a-z]+)$`, Extract: "${sha}"}), tags, "main-20240101-abc"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Compile(tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			got, err := p.Latest(tc.tags)
			if err != nil || got != tc.want {
				t.Errorf("Latest = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestNoMatchAndInvalidPoliciesAreTold(t *testing.T) {
	p, err := Compile(spec(imagev1.ImagePolicyChoice{SemVer: &imagev1.SemVerPolicy{Range: "^9"}}, nil))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Latest([]string{"1.0.0"}); !errors.Is(err, ErrNoMatch) {
		t.Errorf("no tag in range: %v", err)
	}
	p, _ = Compile(spec(imagev1.ImagePolicyChoice{Numerical: &imagev1.NumericalPolicy{}}, nil))
	if _, err := p.Latest([]string{"1", "latest"}); err == nil || errors.Is(err, ErrNoMatch) {
		t.Errorf("a numerical policy over a word: %v", err)
	}
	for name, s := range map[string]imagev1.ImagePolicySpec{
		"bad range":   spec(imagev1.ImagePolicyChoice{SemVer: &imagev1.SemVerPolicy{Range: "not a range"}}, nil),
		"bad pattern": spec(imagev1.ImagePolicyChoice{Alphabetical: &imagev1.AlphabeticalPolicy{}}, &imagev1.TagFilter{Pattern: "("}),
		"no policy":   spec(imagev1.ImagePolicyChoice{}, nil),
		"two":         spec(imagev1.ImagePolicyChoice{Alphabetical: &imagev1.AlphabeticalPolicy{}, Numerical: &imagev1.NumericalPolicy{}}, nil),
		"long":        spec(imagev1.ImagePolicyChoice{Alphabetical: &imagev1.AlphabeticalPolicy{}}, &imagev1.TagFilter{Pattern: string(make([]byte, MaxPatternBytes+1))}),
	} {
		if _, err := Compile(s); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v", name, err)
		}
	}
}
