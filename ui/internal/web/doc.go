// Package web serves Plumb's single-page web application: the HTML, CSS and
// JavaScript modules in static/, embedded in the binary with go:embed so the
// UI needs no CDN and no network at run time (docs/design/ui.md, "Front
// end").
//
// The application is plain ES modules with no build step: app.js routes the
// hash (#/, #/k/…, #/drift, #/events), api.js is the only code that talks to
// the server (fetch with the CSRF header, one EventSource on /api/live that
// every page listens to), dom.js builds elements, each page is one module
// under pages/ (with tree.js, actions.js and stream.js for what two pages
// share, and image.js for what an object page adds for image-controller's
// kinds: an automation's commits read from its events), and vlist.js is
// the virtualised list that keeps long lists (1,000 overview rows, a tree
// of 2,000 objects) to the rows in view. Data reaches the DOM only through
// textContent and setAttribute,
// never innerHTML, and the Content-Security-Policy Handler sends forbids
// inline scripts, so a hostile object name is text, not markup.
//
// Handler serves only the assets; the /api routes are the server package's.
package web
