package app

import (
	"os"
	"runtime/debug"
	"testing"
)

func TestTheControllersCollectGarbageAtHalfTheirLiveHeap(t *testing.T) {
	t.Setenv("GOGC", "") // restored after the test, as it was
	if err := os.Unsetenv("GOGC"); err != nil {
		t.Fatal(err)
	}
	old := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(old) })
	tuneGC()
	if got := debug.SetGCPercent(100); got != DefaultGCPercent {
		t.Errorf("without GOGC, the GC percent is %d, want %d", got, DefaultGCPercent)
	}
	t.Setenv("GOGC", "80")
	debug.SetGCPercent(80) // what the runtime reads from GOGC at start
	tuneGC()
	if got := debug.SetGCPercent(100); got != 80 {
		t.Errorf("with GOGC=80, the GC percent is %d, want the operator's 80", got)
	}
}
