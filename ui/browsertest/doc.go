// Package browsertest drives a real browser — Debian's chromium package,
// headless — from Go tests with chromedp, for the UI's tests: the front
// end's own (ui/internal/web, against a stand-in of the API) and the
// end-to-end ones (e2e/, against the real server and controllers).
//
// It is a thin layer that makes a browser step a test step: each call fails
// the test with what it was waiting for instead of returning an error, has
// a deadline of its own, and an exception thrown in the page or a
// Content-Security-Policy violation fails the test at its end, so a broken
// script cannot pass as "nothing rendered yet". Screenshots go to the folder
// named by PLUMB_UI_SCREENSHOTS (docs/ui when making the docs), or nowhere.
//
// The browser is /usr/bin/chromium (PLUMB_CHROMIUM overrides it); `make
// chromium` installs it, and `make test` depends on that target. Running as
// root (as in CI containers) needs --no-sandbox, which Start adds then only.
package browsertest
