package deploytest

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// dockerfile is what the test reads of a Dockerfile.
type dockerfile struct {
	from       []string
	args       []string   // names of the ARG instructions
	copies     [][]string // sources of each COPY without --from
	entrypoint string
	user       string
}

func parseDockerfile(t *testing.T, path string) dockerfile {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var d dockerfile
	sc := bufio.NewScanner(f)
	var line string
	for sc.Scan() {
		text := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(text, "#") {
			continue
		}
		if cont, ok := strings.CutSuffix(text, `\`); ok {
			line += cont + " "
			continue
		}
		line += text
		fields := strings.Fields(line)
		line = ""
		if len(fields) == 0 {
			continue
		}
		switch strings.ToUpper(fields[0]) {
		case "FROM":
			d.from = append(d.from, fields[1])
		case "COPY":
			args := fields[1:]
			if strings.HasPrefix(args[0], "--from=") {
				continue
			}
			d.copies = append(d.copies, args[:len(args)-1])
		case "ARG":
			name, _, _ := strings.Cut(fields[1], "=")
			d.args = append(d.args, name)
		case "ENTRYPOINT":
			d.entrypoint = strings.Join(fields[1:], " ")
		case "USER":
			d.user = fields[1]
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return d
}

// TestDockerfile reads the one Dockerfile at the root (no Docker engine
// here to build it) as each program's build would, its build argument
// PROGRAM set to a controller or the ui server: multi-stage from
// golang:1.26 to distroless nonroot, every COPY source exists in the
// repository, the go.mod of every module go.work names is copied (the
// workspace build needs them all), and so are the program's sources.
func TestDockerfile(t *testing.T) {
	uses := workspaceModules(t)
	d := parseDockerfile(t, filepath.Join(root, "Dockerfile"))
	for _, name := range append(append([]string(nil), controllers...), "ui") {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(d.args).To(ContainElement("PROGRAM"))
			g.Expect(d.from).To(HaveLen(2))
			g.Expect(d.from[0]).To(HavePrefix("golang:1.26"))
			g.Expect(d.from[1]).To(Equal("gcr.io/distroless/static:nonroot"))
			g.Expect(d.user).To(Equal("65532:65532"))
			g.Expect(d.entrypoint).To(Equal(`["/program"]`))

			copied := map[string]bool{}
			for _, srcs := range d.copies {
				for _, src := range srcs {
					src = strings.ReplaceAll(src, "${PROGRAM}", name)
					matches, err := filepath.Glob(filepath.Join(root, src))
					g.Expect(err).NotTo(HaveOccurred())
					g.Expect(matches).NotTo(BeEmpty(), "COPY %s: no such path in the repository", src)
					for _, m := range matches {
						rel, _ := filepath.Rel(root, m)
						copied[rel] = true
					}
				}
			}
			g.Expect(copied).To(HaveKey("go.work"))
			for _, u := range uses {
				mod := filepath.Join(filepath.Clean(u), "go.mod")
				g.Expect(copied).To(HaveKey(mod), "go.work uses %s; the Dockerfile must copy its go.mod", u)
			}
			for _, dir := range []string{"api/", "pkg/", name + "/"} {
				g.Expect(copied).To(HaveKey(filepath.Clean(dir)), "the build needs the sources of %s", dir)
			}
		})
	}
}

// workspaceModules returns the folders go.work's use directives name, in
// both the block and the single-line form.
func workspaceModules(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "go.work"))
	if err != nil {
		t.Fatal(err)
	}
	var uses []string
	inBlock := false
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if i := strings.Index(line, "//"); i >= 0 {
			line = strings.TrimSpace(line[:i])
		}
		switch {
		case line == "use (":
			inBlock = true
		case inBlock && line == ")":
			inBlock = false
		case inBlock && line != "":
			uses = append(uses, line)
		case strings.HasPrefix(line, "use "):
			uses = append(uses, strings.TrimSpace(strings.TrimPrefix(line, "use ")))
		}
	}
	if len(uses) == 0 {
		t.Fatal("go.work names no module")
	}
	return uses
}
