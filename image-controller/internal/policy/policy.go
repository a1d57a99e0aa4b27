package policy

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"

	"github.com/Masterminds/semver/v3"

	imagev1 "plumb.dev/api/image/v1"
)

// Bounds of what Compile accepts, beyond the CRD's (which a client that
// skips validation, or an older CRD, would not enforce).
const (
	MaxPatternBytes = 1024
	MaxExtractBytes = 256
	MaxRangeBytes   = 1024
	// MaxTagBytes is the distribution spec's limit on a tag: 128
	// characters.
	MaxTagBytes = 128
)

// ErrInvalid marks a policy that cannot be used until its spec changes.
var ErrInvalid = errors.New("invalid policy")

// ErrNoMatch is returned when no tag passes the filter and the policy.
var ErrNoMatch = errors.New("no tag matches")

// Policy is a compiled spec.policy and spec.filterTags.
type Policy struct {
	filter  *regexp.Regexp
	extract string
	order   func(values []string) (int, error)
	// what describes the policy in messages.
	what string
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

// Compile checks and compiles the policy of spec.
func Compile(spec imagev1.ImagePolicySpec) (*Policy, error) {
	p := &Policy{}
	if f := spec.FilterTags; f != nil {
		if len(f.Pattern) > MaxPatternBytes {
			return nil, invalid("spec.filterTags.pattern is %d bytes, more than %d", len(f.Pattern), MaxPatternBytes)
		}
		if len(f.Extract) > MaxExtractBytes {
			return nil, invalid("spec.filterTags.extract is %d bytes, more than %d", len(f.Extract), MaxExtractBytes)
		}
		if f.Pattern != "" {
			re, err := regexp.Compile(f.Pattern)
			if err != nil {
				return nil, invalid("spec.filterTags.pattern %q: %v", f.Pattern, err)
			}
			p.filter = re
		} else if f.Extract != "" {
			return nil, invalid("spec.filterTags.extract needs a pattern whose groups it expands")
		}
		p.extract = f.Extract
	}
	c := spec.Policy
	set := 0
	for _, ok := range []bool{c.SemVer != nil, c.Alphabetical != nil, c.Numerical != nil} {
		if ok {
			set++
		}
	}
	if set != 1 {
		return nil, invalid("spec.policy must set exactly one of semver, alphabetical and numerical, not %d", set)
	}
	switch {
	case c.SemVer != nil:
		if len(c.SemVer.Range) > MaxRangeBytes {
			return nil, invalid("spec.policy.semver.range is %d bytes, more than %d", len(c.SemVer.Range), MaxRangeBytes)
		}
		constraint, err := semver.NewConstraint(c.SemVer.Range)
		if err != nil {
			return nil, invalid("spec.policy.semver.range %q: %v", c.SemVer.Range, err)
		}
		p.order, p.what = semverOrder(constraint), fmt.Sprintf("semver range %q", c.SemVer.Range)
	case c.Alphabetical != nil:
		asc, err := ascending(c.Alphabetical.Order, "alphabetical")
		if err != nil {
			return nil, err
		}
		p.order, p.what = alphabeticalOrder(asc), "alphabetical order "+orderName(asc)
	default:
		asc, err := ascending(c.Numerical.Order, "numerical")
		if err != nil {
			return nil, err
		}
		p.order, p.what = numericalOrder(asc), "numerical order "+orderName(asc)
	}
	return p, nil
}

func ascending(order, policy string) (bool, error) {
	switch order {
	case "", imagev1.OrderAsc:
		return true, nil
	case imagev1.OrderDesc:
		return false, nil
	}
	return false, invalid("spec.policy.%s.order %q is neither asc nor desc", policy, order)
}

func orderName(asc bool) string {
	if asc {
		return imagev1.OrderAsc
	}
	return imagev1.OrderDesc
}

// String describes the policy ("semver range \"^1\"").
func (p *Policy) String() string { return p.what }

// Latest returns the tag the policy chooses among tags. ErrNoMatch when
// none passes the filter (or, for semver, the range); an error for a
// numerical policy over a value that is not a number.
func (p *Policy) Latest(tags []string) (string, error) {
	// Sorted, so that ties go to the same tag whatever the registry's
	// order.
	tags = slices.Sorted(slices.Values(tags))
	var kept, values []string
	for _, t := range tags {
		if len(t) > MaxTagBytes {
			continue
		}
		v := t
		if p.filter != nil {
			m := p.filter.FindStringSubmatchIndex(t)
			if m == nil {
				continue
			}
			if p.extract != "" {
				v = string(p.filter.ExpandString(nil, p.extract, t, m))
			}
		}
		kept, values = append(kept, t), append(values, v)
	}
	if len(kept) == 0 {
		return "", fmt.Errorf("%w the filter among %d tags", ErrNoMatch, len(tags))
	}
	i, err := p.order(values)
	if err != nil {
		return "", err
	}
	if i < 0 {
		return "", fmt.Errorf("%w the %s among %d tags", ErrNoMatch, p.what, len(kept))
	}
	return kept[i], nil
}

// semverOrder returns the index of the highest version within c; -1 when
// none parses or is within it.
func semverOrder(c *semver.Constraints) func([]string) (int, error) {
	return func(values []string) (int, error) {
		best, bestV := -1, (*semver.Version)(nil)
		for i, s := range values {
			v, err := semver.NewVersion(s)
			if err != nil || !c.Check(v) {
				continue
			}
			if bestV == nil || !v.LessThan(bestV) {
				best, bestV = i, v
			}
		}
		return best, nil
	}
}

// alphabeticalOrder returns the index of the last value in byte order
// (asc) or of the first (desc).
func alphabeticalOrder(asc bool) func([]string) (int, error) {
	return func(values []string) (int, error) {
		best := 0
		for i, s := range values {
			if (asc && s >= values[best]) || (!asc && s <= values[best]) {
				best = i
			}
		}
		return best, nil
	}
}

// numericalOrder returns the index of the highest number (asc) or of the
// lowest (desc); a value that is not a number is an error.
func numericalOrder(asc bool) func([]string) (int, error) {
	return func(values []string) (int, error) {
		best, bestN := -1, 0.0
		for i, s := range values {
			n, err := strconv.ParseFloat(s, 64)
			if err != nil {
				return -1, fmt.Errorf("%q is not a number, which a numerical policy orders by: narrow the tags with spec.filterTags", s)
			}
			if best < 0 || (asc && n >= bestN) || (!asc && n <= bestN) {
				best, bestN = i, n
			}
		}
		return best, nil
	}
}
