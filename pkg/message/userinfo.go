package message

import "regexp"

// userInfo matches the user info of a URL written in text: a scheme, "://",
// then anything up to the last "@" that comes before the first "/", "?",
// "#" or white space. The last, as URL parsers (Go's, go-git's) take it: a
// password with an unescaped "@" ("u:p@ss@host") is user info up to the
// last one, and stopping at the first would show "ss". The capture keeps
// the scheme.
var userInfo = regexp.MustCompile(`([a-zA-Z][a-zA-Z0-9+.\-]*://)[^/?#\s]*@`)

// StripUserInfo removes the user info ("user:password@") of every URL in
// s, so a URL that carried credentials can be quoted in a status, an event,
// a log line or an alert:
//
//	fetch https://bot:ghp_123@git.example.com/org/repo.git: 403
//	fetch https://git.example.com/org/repo.git: 403
//
// Text without such a URL is returned unchanged.
func StripUserInfo(s string) string {
	if !userInfo.MatchString(s) {
		return s
	}
	return userInfo.ReplaceAllString(s, "$1")
}
