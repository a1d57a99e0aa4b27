package access

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"strings"
	"time"
)

// The device cookie marks a browser that has signed in here before, so
// that its sign-ins are throttled on their own rather than with everyone
// else's behind its address (OWASP's "device cookies"). Without it, one
// script behind a shared address — a company's NAT, or the ingress that
// every user of a cluster comes through — could spend the address's
// sign-ins and lock every user out. It is given only after a successful
// sign-in, so whoever holds one once held a working credential: an
// attacker cannot mint them, and trying tokens without one stays bounded
// by the address's limiter.
const (
	DeviceCookieName       = "plumb_device"
	SecureDeviceCookieName = "__Host-plumb_device"
	// deviceCookieTTL is how long a browser is remembered.
	deviceCookieTTL = 30 * 24 * time.Hour
	// deviceIDBytes is the random part of a device cookie.
	deviceIDBytes = 16
)

// deviceCookieName is the device cookie's name, with the __Host- prefix
// when it is Secure, as the session cookie's.
func (g *Gate) deviceCookieName() string {
	if g.secure() {
		return SecureDeviceCookieName
	}
	return DeviceCookieName
}

// device returns the id of the request's device cookie when the Gate
// made it (its MAC checks out), else "".
func (g *Gate) device(r *http.Request) string {
	c, err := r.Cookie(g.deviceCookieName())
	if err != nil {
		return ""
	}
	id, mac, ok := strings.Cut(c.Value, ".")
	if !ok {
		return ""
	}
	want := g.deviceMAC(id)
	got, err := base64.RawURLEncoding.DecodeString(mac)
	if err != nil || !hmac.Equal(got, want) {
		return ""
	}
	return id
}

// deviceMAC is the MAC of a device id under the Gate's key.
func (g *Gate) deviceMAC(id string) []byte {
	m := hmac.New(sha256.New, g.deviceKey)
	m.Write([]byte(id))
	return m.Sum(nil)
}

// rememberDevice gives the browser a device cookie after a successful
// sign-in, unless it has one of this Gate's.
func (g *Gate) rememberDevice(w http.ResponseWriter, r *http.Request) {
	if g.device(r) != "" {
		return
	}
	b := make([]byte, deviceIDBytes)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on a supported platform
	}
	id := base64.RawURLEncoding.EncodeToString(b)
	http.SetCookie(w, &http.Cookie{
		Name: g.deviceCookieName(), Value: id + "." + base64.RawURLEncoding.EncodeToString(g.deviceMAC(id)),
		Path: "/", MaxAge: int(deviceCookieTTL / time.Second),
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: g.secure(),
	})
}
