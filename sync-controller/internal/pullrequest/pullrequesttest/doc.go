// Package pullrequesttest serves stand-ins of the pull request APIs of
// GitHub, GitLab and Gitea for tests: HTTPS on loopback, checking each
// request as the host does (its auth header, path, query and paging
// parameters) and answering 401 or 404 where the host would, with the
// fields and the paging headers the host sends.
package pullrequesttest
