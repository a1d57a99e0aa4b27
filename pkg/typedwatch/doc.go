// Package typedwatch lists and watches a kind of Plumb's with each watch
// event decoded in one pass into the typed object, for the informers of
// the controllers' own kinds (pkg/app hands NewInformerFunc to
// controller-runtime's cache).
//
// # Why
//
// Every status write of a Kustomization comes back to both controllers
// that write it as a watch event carrying the whole object in JSON, and
// decoding those events was a sixth of render-controller's CPU and a
// seventh of sync-controller's in a fleet sync (docs/bench/fleet.md,
// "Fleet runs P1–P3"). client-go reads each frame about nine times: the
// framer's scan, the envelope's kind sniffed with encoding/json (a validity
// scan and a decode over the whole frame), the envelope decoded with
// sigs.k8s.io/json (another two, its object copied out as raw bytes), then
// the object's kind sniffed and the object decoded the same way. Here a
// frame is scanned by client-go's framer, then decoded once, envelope and
// object together, with the same library and options client-go's JSON
// serializer uses (sigs.k8s.io/json, case-sensitive, integers kept), into
// the typed object: a validity scan and one decode.
//
// # How, and what stays client-go's
//
// controller-runtime offers no hook for the codec of its informers (it
// sets its own serializer on the REST config), so NewInformerFunc gives
// each own kind's informer a ListWatch of this package: the same list and
// watch requests controller-runtime sends (the cache's label and field
// selectors and namespace, watch bookmarks), from a REST client whose
// runtime.ClientNegotiator (NewClientNegotiator) is client-go's except for
// JSON answers of the kind. The watch is rest.Request.Watch, and the
// informer client-go's shared index informer, so retries, the initial
// list as a watch with initial events, bookmarks, resource versions, a
// 410 Gone and the relist after it, and the cache's transform (managed
// fields stripped, a controller's trims) are client-go's and
// controller-runtime's code, unchanged.
//
// The one hook client-go calls per watch is the negotiator's
// StreamDecoder: it returns the framer, the serializer of the event
// envelopes and the decoder of each event's object, and then decodes
// each frame by calling the envelope serializer and, right after, the
// object decoder on the envelope's raw object. So the pair this package
// returns shares one slot: the envelope serializer decodes the whole
// frame into a typed object and keeps it, and the object decoder hands
// it over. A frame that is not an event of the kind — an ERROR event (its
// object a Status), an object of another kind, an unknown event type, a
// syntax error — goes to client-go's decoders instead, which produce what
// they always do, errors included.
//
// What a watch event or a list decodes to is what client-go's decoders
// produce, field for field: the object's apiVersion and kind cleared (as
// client-go's decoder without conversion clears them; a list's items keep
// theirs), decoded into a zero object. The tests feed the frames of real
// watches (initial events and their bookmark, creates, status writes,
// updates, deletes, a 410 Gone) and a real list through both and compare.
package typedwatch
