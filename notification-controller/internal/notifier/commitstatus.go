package notifier

// commitStatusKinds are the Git hosts that take a commit status: github,
// gitlab, gitea, bitbucket, bitbucketserver, azuredevops, and
// githubdispatch (repository_dispatch events).
var commitStatusKinds = map[string]kind{}
