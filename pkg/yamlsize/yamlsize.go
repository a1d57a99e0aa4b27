package yamlsize

import (
	"errors"
	"fmt"

	yaml "go.yaml.in/yaml/v3"
)

// MaxDepth bounds nesting (the parser's own limit is higher); no
// Kubernetes object or values file comes near it.
const MaxDepth = 1000

// Expanded counts the nodes of n as they are after alias expansion,
// without expanding anything: each anchored node's size is computed once
// and an alias costs that size. It stops early once the count passes max,
// and fails on nesting deeper than MaxDepth and on an alias inside the
// node it refers to.
func Expanded(n *yaml.Node, max int64) (int64, error) {
	memo := map[*yaml.Node]int64{}
	var size func(n *yaml.Node, depth int) (int64, error)
	size = func(n *yaml.Node, depth int) (int64, error) {
		if depth > MaxDepth {
			return 0, fmt.Errorf("YAML nested deeper than %d levels", MaxDepth)
		}
		if n.Kind == yaml.AliasNode {
			if n.Alias == nil {
				return 1, nil
			}
			n = n.Alias
		}
		if v, ok := memo[n]; ok {
			if v < 0 {
				return 0, errors.New("a YAML alias refers to a node that contains it")
			}
			return v, nil
		}
		memo[n] = -1
		total := int64(1)
		for _, c := range n.Content {
			v, err := size(c, depth+1)
			if err != nil {
				return 0, err
			}
			if total += v; total > max {
				return 0, fmt.Errorf("more than %d YAML nodes once aliases are expanded (--max-yaml-nodes)", max)
			}
		}
		memo[n] = total
		return total, nil
	}
	return size(n, 0)
}
