// Package testhelm gives tests real Helm parts on 127.0.0.1: charts packaged
// by the Helm SDK, an HTTP chart repository whose index.yaml the SDK builds,
// and an in-process OCI registry that the SDK's registry client pushes to.
//
//	tgz, err := testhelm.Package(testhelm.Chart{Name: "podinfo", Version: "1.0.0",
//		Files: testhelm.Files{"templates/cm.yaml": "..."}})
//
//	repo, err := testhelm.NewRepo(testhelm.RepoOptions{Username: "u", Password: "p", TLS: true})
//	defer repo.Close()
//	err = repo.Add(testhelm.Chart{Name: "podinfo", Version: "1.0.0"})
//	url := repo.URL()                  // https://127.0.0.1:<port>
//	ca := repo.CA()                    // PEM, for a Secret's ca.crt
//
//	reg, err := testhelm.NewRegistry(testhelm.RegistryOptions{})
//	defer reg.Close()
//	ref, err := reg.Push(testhelm.Chart{Name: "podinfo", Version: "1.0.0"})
//	url := reg.URL()                   // oci://127.0.0.1:<port>/charts
//	ref, err = reg.PushArchiveTo(tgz, "jetstack/charts") // a real registry's path
//
// Charts are built by the SDK's loader and saved by its chartutil.Save with
// fixed modification times, so the same Chart always packages to the same
// bytes. The repository's index is the SDK's repo.IndexFile of the charts it
// serves, regenerated on every Add; SetIndex replaces it with raw bytes so a
// test can serve a broken one. The registry is go-containerregistry's
// pkg/registry, plain HTTP, optionally behind basic auth.
package testhelm
