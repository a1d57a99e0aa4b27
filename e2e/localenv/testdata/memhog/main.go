// Command memhog is the real node's memory-limit test program: at start it
// allocates MEMHOG_MIB mebibytes (default 96) and writes to every page, so
// the memory is really charged to its cgroup, then holds it and answers
// every request on :8080. Under a smaller limit the kernel kills it
// (OOMKilled); under a larger one it serves.
package main

import (
	"fmt"
	"log"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"time"
)

func main() {
	mib := 96
	if v := os.Getenv("MEMHOG_MIB"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 4096 {
			log.Fatalf("MEMHOG_MIB=%q: want 0 to 4096", v)
		}
		mib = n
	}
	held := make([][]byte, mib)
	for i := range held {
		held[i] = make([]byte, 1<<20)
		for j := 0; j < len(held[i]); j += 4096 {
			held[i][j] = 1
		}
	}
	log.Printf("holding %d MiB", mib)
	srv := &http.Server{
		Addr: ":8080",
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "holding %d MiB\n", len(held))
		}),
		ReadHeaderTimeout: 5 * time.Second,
	}
	err := srv.ListenAndServe()
	runtime.KeepAlive(held)
	log.Fatal(err)
}
