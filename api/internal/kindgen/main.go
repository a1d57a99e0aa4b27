package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: kindgen DIR...  (writes DIR/"+outputFile+" for each API package directory)")
		os.Exit(2)
	}
	for _, dir := range os.Args[1:] {
		if err := write(dir); err != nil {
			fmt.Fprintln(os.Stderr, "kindgen:", err)
			os.Exit(1)
		}
	}
}
