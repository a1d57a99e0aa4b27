package localenv

import (
	"fmt"
	"syscall"
)

// MinFreeDisk is the free space a real node needs on the file system of
// its folder (the kubelet's root, containerd's images and snapshots): below
// it the node does not start. The kubelet is set to evict only under 1 %
// free (kubeletConfig), as these machines' disk is shared; a node that
// started with less than this would pull a few images and then evict the
// Pods of the very test that runs, which reads as a failure of Plumb.
const MinFreeDisk uint64 = 10 << 30

// checkFreeDisk says why the file system holding path cannot take a real
// node: it has less than min bytes free for an unprivileged writer (the
// kubelet counts the same space).
func checkFreeDisk(path string, min uint64) error {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return fmt.Errorf("checking the free disk space of %s: %w", path, err)
	}
	free := st.Bavail * uint64(st.Bsize)
	if free < min {
		return fmt.Errorf("a real node needs %s free on the file system of %s and it has %s: the kubelet would evict Pods under disk pressure; free some space", gib(min), path, gib(free))
	}
	return nil
}

func gib(bytes uint64) string { return fmt.Sprintf("%.1f GiB", float64(bytes)/(1<<30)) }
