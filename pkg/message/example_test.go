package message_test

import (
	"fmt"
	"strings"

	"plumb.dev/pkg/message"
)

func Example() {
	// A render error quoting a 40 KB patch from spec.patches.
	err := "kustomize build failed: invalid patch: " + strings.Repeat("x", 40_000)
	msg := message.Truncate(err)
	fmt.Println(len(msg) <= message.MaxBytes)
	fmt.Println(msg[len(msg)-25:])
	fmt.Println(message.Truncate("rendered 3 objects") == "rendered 3 objects")

	// A smaller bound, cut at a rune boundary.
	fmt.Println(message.TruncateTo("héllo wörld, and a good deal more", 32))
	// Output:
	// true
	// xx… (35,966 more bytes)
	// true
	// héllo wörld… (22 more bytes)
}
