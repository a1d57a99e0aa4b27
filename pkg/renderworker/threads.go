package renderworker

// threadStackBytes is a cgo worker's thread stack. Go code runs on its
// goroutines' own stacks; a thread's stack serves the runtime and C calls
// only, which need far less.
const threadStackBytes = 512 << 10

// envMallocArenas is glibc's setting for its number of malloc arenas.
const envMallocArenas = "MALLOC_ARENA_MAX"
