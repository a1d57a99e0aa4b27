// Command hello stands in for a Plumb program in imagebuild's tests: a
// static binary that is quick to build for two platforms and answers
// --help with a usage, as the programs do.
package main

import (
	"flag"
	"fmt"

	"plumb.dev/pkg/version"
)

func main() {
	name := flag.String("name", "world", "whom to greet")
	flag.Parse()
	fmt.Printf("hello, %s, from %s\n", *name, version.Get())
}
