// Package testgit runs real Git servers on 127.0.0.1 for tests: smart HTTP
// (with basic or bearer-token auth) and SSH (with public-key auth and a
// host key the test can put in known_hosts).
//
//	srv, err := testgit.NewServer(testgit.Options{Username: "git", Password: "s3cret"})
//	defer srv.Close()
//	repo, err := srv.CreateRepo("podinfo")          // bare, default branch main
//	c1, err := repo.Commit("main", "first", testgit.Files{"app/cm.yaml": "..."})
//	err = repo.Tag("v1.0.0", c1, "release 1.0.0")   // annotated; "" = lightweight
//	key, err := testgit.NewSigningKey("alice")       // OpenPGP, Ed25519
//	repo.SignWith(key.Entity)                       // later commits and annotated tags are signed
//	repo.SignWithSSH(signer)                        // or signed with an SSH key (gpg.format=ssh)
//	repo.Commit("main", "lib", testgit.Files{".gitmodules": "...", "lib": testgit.Gitlink(c1)}) // a submodule
//	url := repo.URL()                               // http://127.0.0.1:<port>/podinfo.git
//	n := srv.Fetches("podinfo")                     // upload-pack requests served
//	srv.BeforePush(func(repo string, n int) {...})  // runs as a push arrives: move the branch to make it stale
//	s, err := repo.File(c1, "app/cm.yaml")           // read back what a client pushed
//	ps, err := repo.Parents(c1)                     // its history
//	out, err := repo.VerifySSH(c1, "bot@plumb.dev", pub) // git verify-commit with gpg.format=ssh
//
// With Options.TLS the HTTP side serves HTTPS with the test's
// certificate (URL is https://...).
//
// Repositories are written with go-git and served by Git itself: the HTTP
// side is `git http-backend` run as CGI, the SSH side runs `git upload-pack`
// for each session. go-git's own server transport cannot serve shallow
// fetches (it refuses the "shallow" capability), which every real host
// serves and which the controllers ask for, so the git binary (already a
// requirement of `git archive` in the benchmarks) does the serving. Pushing
// over HTTP is served only with Options.Push (a command under test that
// pushes, as bootstrap does); otherwise tests change repositories through
// Repo's methods. Over HTTP such a server advertises push options (git
// push -o), and PushOptions returns those of a repository's last push.
//
// Fetches counts the pack negotiations (POST .../git-upload-pack over HTTP,
// every upload-pack session over SSH) so a test can tell a clone from a
// reference listing: over HTTP, listing references (ls-remote) does not
// count.
package testgit
