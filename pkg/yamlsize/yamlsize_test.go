package yamlsize_test

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	yaml "go.yaml.in/yaml/v3"

	"plumb.dev/pkg/yamlsize"
)

func parse(t *testing.T, s string) *yaml.Node {
	t.Helper()
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(s), &n); err != nil {
		t.Fatal(err)
	}
	return &n
}

// An alias costs the size of the node it names, counted once.
func TestExpandedCountsAliasesAsTheirNodes(t *testing.T) {
	g := NewWithT(t)
	plain, err := yamlsize.Expanded(parse(t, "a: [1, 2]\nb: [1, 2]\n"), 100)
	g.Expect(err).NotTo(HaveOccurred())
	aliased, err := yamlsize.Expanded(parse(t, "a: &x [1, 2]\nb: *x\n"), 100)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(aliased).To(Equal(plain))
}

// A billion laughs is refused while it is counted, not expanded.
func TestExpandedRefusesAnAliasBomb(t *testing.T) {
	g := NewWithT(t)
	doc := "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
	prev := "a"
	for _, name := range []string{"b", "c", "d", "e", "f", "g", "h", "i", "j"} {
		doc += name + ": &" + name + " [" + strings.TrimSuffix(strings.Repeat("*"+prev+", ", 10), ", ") + "]\n"
		prev = name
	}
	_, err := yamlsize.Expanded(parse(t, doc), 1_000_000)
	g.Expect(err).To(MatchError(ContainSubstring("more than 1000000 YAML nodes once aliases are expanded")))
}

// Nesting deeper than MaxDepth is refused.
func TestExpandedRefusesDeepNesting(t *testing.T) {
	g := NewWithT(t)
	deep := strings.Repeat("[", yamlsize.MaxDepth+1) + strings.Repeat("]", yamlsize.MaxDepth+1)
	_, err := yamlsize.Expanded(parse(t, deep), 1_000_000)
	g.Expect(err).To(MatchError(ContainSubstring("nested deeper than")))
}
