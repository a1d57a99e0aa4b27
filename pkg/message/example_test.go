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

func ExampleStripUserInfo() {
	fmt.Println(message.StripUserInfo("fetch https://bot:ghp_123@git.example.com/org/repo.git failed: 403"))
	fmt.Println(message.StripUserInfo("ssh://git@github.com/org/repo and nats://u:p@nats:4222, mail me@example.com"))
	// Output:
	// fetch https://git.example.com/org/repo.git failed: 403
	// ssh://github.com/org/repo and nats://nats:4222, mail me@example.com
}

func ExampleNames() {
	pruned := []string{"ConfigMap/apps/a", "ConfigMap/apps/b", "ConfigMap/apps/c", "ConfigMap/apps/d"}
	fmt.Println(strings.Join(message.Names(pruned, 2), ", "))
	fmt.Println(strings.Join(message.Names(pruned, 10), ", "))
	// Output:
	// ConfigMap/apps/a, ConfigMap/apps/b, and 2 more
	// ConfigMap/apps/a, ConfigMap/apps/b, ConfigMap/apps/c, ConfigMap/apps/d
}
