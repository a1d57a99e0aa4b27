// Command packbench measures artifact.Pack against
// `git archive --format=tar HEAD | gzip -6` on the same generated tree, in
// the same run, and prints a table with the ratio.
//
// Each side runs in its own child process so its peak resident memory
// (max RSS from wait4) is its own: pkg/artifact in a re-exec of this binary
// (`packbench pack <dir> <out>`), git and gzip as two piped processes whose
// peaks are added (they run at the same time). Times are wall-clock medians
// of -runs runs, the sides alternating so background load hits both alike.
//
//	go run ./pkg/bench/pack [-files 10000] [-runs 5]
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"plumb.dev/pkg/artifact"
)

func main() {
	if len(os.Args) == 4 && os.Args[1] == "pack" {
		if err := pack(os.Args[2], os.Args[3]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	files := flag.Int("files", 10000, "files in the generated tree")
	runs := flag.Int("runs", 5, "runs of each side; the median is reported")
	flag.Parse()
	if err := bench(*files, *runs); err != nil {
		fmt.Fprintln(os.Stderr, "packbench:", err)
		os.Exit(1)
	}
}

// pack is the child side measured for pkg/artifact.
func pack(dir, out string) error {
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	defer f.Close()
	empty := ""
	// No ignore rules beyond .git, so both sides pack the same files.
	return artifact.Pack(context.Background(), f, dir, artifact.PackOptions{Ignore: artifact.NewIgnorer(&empty)})
}

type sample struct {
	wall  time.Duration
	rssKB int64
	size  int64
}

func bench(nFiles, runs int) error {
	tmp, err := os.MkdirTemp("", "plumb-packbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	tree := filepath.Join(tmp, "tree")
	bytes, err := generate(tree, nFiles)
	if err != nil {
		return err
	}
	if err := gitCommit(tree); err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}

	var ours, theirs []sample
	for i := 0; i < runs; i++ {
		s, err := runOurs(self, tree, filepath.Join(tmp, "ours.tar.gz"))
		if err != nil {
			return fmt.Errorf("pkg/artifact: %w", err)
		}
		ours = append(ours, s)
		s, err = runGit(tree, filepath.Join(tmp, "git.tar.gz"))
		if err != nil {
			return fmt.Errorf("git archive: %w", err)
		}
		theirs = append(theirs, s)
	}
	o, g := median(ours), median(theirs)

	fmt.Printf("Packing a generated tree of %d files (%.1f MiB) into tar.gz, median of %d runs\n\n", nFiles, float64(bytes)/(1<<20), runs)
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "packer\ttime\tpeak RSS\toutput\t")
	fmt.Fprintf(w, "pkg/artifact Pack (gzip -6)\t%s\t%s\t%s\t\n", ms(o.wall), mib(o.rssKB), size(o.size))
	fmt.Fprintf(w, "git archive --format=tar HEAD | gzip -6\t%s\t%s\t%s\t\n", ms(g.wall), mib(g.rssKB), size(g.size))
	fmt.Fprintf(w, "ratio pkg/artifact / git\t%.2fx\t%.2fx\t%.2fx\t\n",
		float64(o.wall)/float64(g.wall), float64(o.rssKB)/float64(g.rssKB), float64(o.size)/float64(g.size))
	return w.Flush()
}

// generate writes n files of Kubernetes-like YAML of varied sizes into
// 100-file folders, deterministic for a given n, and returns their bytes.
func generate(dir string, n int) (int64, error) {
	rng := rand.New(rand.NewPCG(42, uint64(n)))
	words := strings.Fields("apiVersion kind metadata name namespace labels app tier spec replicas selector template containers image ports containerPort env value resources limits cpu memory requests volumeMounts mountPath configMap data key true false nginx redis postgres frontend backend")
	var total int64
	var b strings.Builder
	for i := 0; i < n; i++ {
		sub := filepath.Join(dir, fmt.Sprintf("apps/team-%02d/svc-%03d", i/1000, (i/100)%10*10+i%7), fmt.Sprintf("d%02d", (i/100)%100))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			return 0, err
		}
		b.Reset()
		lines := 5 + rng.IntN(150)
		fmt.Fprintf(&b, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%d\ndata:\n", i)
		for l := 0; l < lines; l++ {
			fmt.Fprintf(&b, "  %s-%d: %s %s %d\n", words[rng.IntN(len(words))], l, words[rng.IntN(len(words))], words[rng.IntN(len(words))], rng.IntN(100000))
		}
		name := filepath.Join(sub, fmt.Sprintf("f%05d.yaml", i))
		if err := os.WriteFile(name, []byte(b.String()), 0o644); err != nil {
			return 0, err
		}
		total += int64(b.Len())
	}
	return total, nil
}

func gitCommit(dir string) error {
	for _, args := range [][]string{
		{"init", "-q"},
		{"add", "-A"},
		{"-c", "user.name=bench", "-c", "user.email=bench@plumb.dev", "commit", "-q", "-m", "tree"},
	} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	return nil
}

func runOurs(self, tree, out string) (sample, error) {
	cmd := exec.Command(self, "pack", tree, out)
	cmd.Stderr = os.Stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return sample{}, err
	}
	wall := time.Since(start)
	fi, err := os.Stat(out)
	if err != nil {
		return sample{}, err
	}
	return sample{wall: wall, rssKB: maxRSS(cmd), size: fi.Size()}, nil
}

func runGit(tree, out string) (sample, error) {
	f, err := os.Create(out)
	if err != nil {
		return sample{}, err
	}
	defer f.Close()
	archive := exec.Command("git", "archive", "--format=tar", "HEAD")
	archive.Dir = tree
	gz := exec.Command("gzip", "-6")
	pipe, err := archive.StdoutPipe()
	if err != nil {
		return sample{}, err
	}
	gz.Stdin = pipe
	gz.Stdout = f
	start := time.Now()
	if err := gz.Start(); err != nil {
		return sample{}, err
	}
	if err := archive.Start(); err != nil {
		return sample{}, err
	}
	errA := archive.Wait()
	errG := gz.Wait()
	wall := time.Since(start)
	if errA != nil || errG != nil {
		return sample{}, fmt.Errorf("archive: %v, gzip: %v", errA, errG)
	}
	fi, err := f.Stat()
	if err != nil {
		return sample{}, err
	}
	return sample{wall: wall, rssKB: maxRSS(archive) + maxRSS(gz), size: fi.Size()}, nil
}

func maxRSS(cmd *exec.Cmd) int64 {
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		return ru.Maxrss // KiB on Linux
	}
	return 0
}

func median(s []sample) sample {
	sorted := func(less func(a, b sample) bool) []sample {
		c := append([]sample(nil), s...)
		sort.Slice(c, func(i, j int) bool { return less(c[i], c[j]) })
		return c
	}
	m := len(s) / 2
	return sample{
		wall:  sorted(func(a, b sample) bool { return a.wall < b.wall })[m].wall,
		rssKB: sorted(func(a, b sample) bool { return a.rssKB < b.rssKB })[m].rssKB,
		size:  s[0].size,
	}
}

func ms(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond)) }
func mib(kb int64) string       { return fmt.Sprintf("%.1f MiB", float64(kb)/1024) }
func size(b int64) string       { return fmt.Sprintf("%.2f MiB", float64(b)/(1<<20)) }
