package testhelm

import "strings"

// HostileValues returns a values file of about size bytes that costs
// some 130 times its size to parse: a flow list of ones, each a YAML node,
// an interface value, a JSON token and an interface value again as Helm
// reads values (YAML, then JSON and back). Measured with
// common.ReadValues: 878 KiB peaked at 117 MiB of heap. Aliases amplify
// less: go-yaml refuses a document that expands more than about 400,000
// nodes through them.
func HostileValues(size int) string {
	return "a: [" + strings.Repeat("1,", size/2) + "1]\n"
}
