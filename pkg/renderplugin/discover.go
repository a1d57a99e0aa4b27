package renderplugin

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
)

// Names lists the plugins whose sockets are in c.Dir, sorted: the files
// named <name>.sock with a valid name. More than MaxPlugins is an error,
// so that a discovery asks a bounded number of sockets.
func (c *Client) Names() ([]string, error) {
	entries, err := os.ReadDir(c.Dir)
	if err != nil {
		return nil, fmt.Errorf("reading the plugins' folder: %w", err)
	}
	var names []string
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".sock")
		if ok && e.Type()&os.ModeSocket != 0 && ValidName(name) {
			names = append(names, name)
		}
	}
	if len(names) > MaxPlugins {
		return nil, fmt.Errorf("the plugins' folder holds %d sockets, more than the %d a discovery asks", len(names), MaxPlugins)
	}
	sort.Strings(names)
	return names, nil
}

// Discover finds the plugin for a request that names none, as Argo CD
// does for a plugin source without a name: every plugin in c.Dir is asked
// what it takes, and the one whose discover rule matches a file in
// req.Path renders it. None matching, or more than one, is an error
// naming the plugins and what each looks for; a plugin that does not
// answer is named too, and matches nothing.
func (c *Client) Discover(ctx context.Context, req *Request, sourceDir string) (*Info, error) {
	names, err := c.Names()
	if err != nil {
		return nil, err
	}
	var found []*Info
	var asked []string
	for _, name := range names {
		info, err := c.Info(ctx, name)
		switch {
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case err != nil:
			asked = append(asked, name+" (does not answer)")
		case info.Discover == nil || info.Discover.FileName == "":
			asked = append(asked, name+" (no discover rule)")
		default:
			asked = append(asked, fmt.Sprintf("%s (%s)", name, info.Discover.FileName))
			if info.discovers(req.Path, sourceDir) {
				found = append(found, info)
			}
		}
	}
	switch {
	case len(found) == 1:
		return found[0], nil
	case len(found) > 1:
		var both []string
		for _, f := range found {
			both = append(both, fmt.Sprintf("%s (%s)", f.Name, f.Discover.FileName))
		}
		return nil, fmt.Errorf("spec.plugin names no plugin, and %d plugins discover path %q: %s; name one in spec.plugin.name", len(found), displayPath(req.Path), strings.Join(both, ", "))
	case len(asked) == 0:
		return nil, fmt.Errorf("spec.plugin names no plugin, and there is no plugin to discover one (no socket in the plugins' folder)")
	}
	return nil, fmt.Errorf("spec.plugin names no plugin, and none discovers path %q: %s", displayPath(req.Path), strings.Join(asked, ", "))
}

// Versions is the identity of the plugins a request may reach, for a
// render's cache key: name=version of the plugin name, or of every plugin
// in c.Dir when name is "" (a discovery, which a new or removed plugin
// may change). A plugin that does not answer is name=absent, so that its
// return renders again.
func (c *Client) Versions(ctx context.Context, name string) string {
	names := []string{name}
	if name == "" {
		var err error
		if names, err = c.Names(); err != nil {
			return "unreadable"
		}
	}
	var b strings.Builder
	for _, n := range names {
		v := "absent"
		if info, err := c.Info(ctx, n); err == nil {
			v = fmt.Sprintf("%d:%s", len(info.Version), info.Version)
		}
		fmt.Fprintf(&b, "%s=%s\n", n, v)
	}
	return b.String()
}

func displayPath(p string) string {
	if p == "" {
		return "."
	}
	return p
}
