// Package testtar writes the tar and tar.gz archives tests feed to the
// code that reads artifacts, charts and OCI layers: a map of files, or
// entries exactly as given, hostile ones included (links out of the tree,
// devices, PAX headers with long names), which no packer of Plumb's would
// write.
//
//	tgz := testtar.TarGz(t, testtar.Files(map[string]string{"app/Chart.yaml": "..."})...)
//	bad := testtar.TarGz(t, testtar.File("x/Chart.yaml", "..."), testtar.Symlink("x/values.yaml", "/etc/passwd"))
//
// Entries are written in the order given (Files sorts by name, so the
// same map always gives the same bytes); a missing mode is 0644 and the
// size is the body's, so a header says only what a test means it to.
package testtar
