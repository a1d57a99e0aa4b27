// Package testtls makes a throwaway certificate authority for tests: a
// CA, a server certificate for 127.0.0.1, ::1 and localhost, and a
// client certificate, in the PEM that a Secret's ca.crt, tls.crt and
// tls.key hold, and the tls.Configs that serve and present them.
//
// Tests of registries, chart repositories and Git hosts behind TLS (with
// and without client certificates) need the same three certificates; one
// authority keeps their templates, key type and validity in one place.
package testtls
