package localenv

import (
	"syscall"
	"testing"

	. "github.com/onsi/gomega"
)

// The free-disk check refuses a file system with less than the threshold
// free, naming the path and both amounts, and accepts one with more.
func TestARealNodeRefusesAFullDisk(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	var st syscall.Statfs_t
	g.Expect(syscall.Statfs(dir, &st)).To(Succeed())
	free := st.Bavail * uint64(st.Bsize)

	err := checkFreeDisk(dir, free+(1<<40))
	g.Expect(err).To(HaveOccurred())
	g.Expect(err.Error()).To(ContainSubstring(dir))
	g.Expect(err.Error()).To(ContainSubstring("free some space"))
	g.Expect(err.Error()).To(ContainSubstring(gib(free + (1 << 40))))

	g.Expect(checkFreeDisk(dir, free/2)).To(Succeed())
	g.Expect(checkFreeDisk(dir+"/missing", 0)).To(MatchError(ContainSubstring("checking the free disk space")))
}
