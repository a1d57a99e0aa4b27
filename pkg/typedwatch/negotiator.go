package typedwatch

import (
	"fmt"
	"io"
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/watch"
	kjson "sigs.k8s.io/json"
)

// NewClientNegotiator returns the negotiator of a REST client for the API
// group version of gvk: client-go's own (the scheme's codecs without
// conversion, as controller-runtime's typed clients use), except that JSON
// answers that carry objects of kind gvk — a watch's events, a list of
// them, one of them — are decoded in one pass into the typed object (see
// the package documentation). Every other answer, and any answer of that
// kind that does not decode in one pass (an ERROR event, an object of
// another kind, a syntax error), is decoded by client-go's decoders, with
// their errors.
func NewClientNegotiator(scheme *runtime.Scheme, gvk schema.GroupVersionKind) (runtime.ClientNegotiator, error) {
	codecs := serializer.NewCodecFactory(scheme)
	ns := serializer.WithoutConversionCodecFactory{CodecFactory: codecs}
	info, ok := runtime.SerializerInfoForMediaType(ns.SupportedMediaTypes(), runtime.ContentTypeJSON)
	if !ok || info.StreamSerializer == nil {
		return nil, fmt.Errorf("the scheme's codecs have no JSON stream serializer")
	}
	n := &negotiator{
		ClientNegotiator: runtime.NewClientNegotiator(ns, gvk.GroupVersion()),
		mediaTypes:       ns.SupportedMediaTypes(),
		jsonMediaType:    info.MediaType,
		kinds:            map[reflect.Type]schema.GroupVersionKind{},
		event:            eventKind{gvk: gvk, scheme: scheme},
	}
	listGVK := gvk.GroupVersion().WithKind(gvk.Kind + "List")
	for _, k := range []schema.GroupVersionKind{gvk, listGVK} {
		obj, err := scheme.New(k)
		if err != nil {
			return nil, fmt.Errorf("one-pass decoding of %s: %w", k, err)
		}
		if _, unstructured := obj.(runtime.Unstructured); unstructured {
			return nil, fmt.Errorf("one-pass decoding of %s: the scheme has no Go type for it", k)
		}
		n.kinds[reflect.TypeOf(obj)] = k
	}
	return n, nil
}

type eventKind struct {
	gvk    schema.GroupVersionKind
	scheme *runtime.Scheme
}

// negotiator is client-go's negotiator with the JSON decoders of its
// kinds replaced.
type negotiator struct {
	runtime.ClientNegotiator
	mediaTypes    []runtime.SerializerInfo
	jsonMediaType string
	// kinds maps the Go types of the object and the list decoded in one
	// pass to the kind their JSON must name.
	kinds map[reflect.Type]schema.GroupVersionKind
	// event is the kind of a watch's objects: a watch is of one resource.
	event eventKind
}

// isJSON reports whether client-go's negotiator would pick the JSON
// serializer for contentType (an empty one falls back to the first media
// type, JSON).
func (n *negotiator) isJSON(contentType string) bool {
	info, ok := runtime.SerializerInfoForMediaType(n.mediaTypes, contentType)
	if !ok {
		if contentType != "" || len(n.mediaTypes) == 0 {
			return false
		}
		info = n.mediaTypes[0]
	}
	return info.MediaType == n.jsonMediaType
}

// Decoder is the decoder of a whole answer (a list, a get, an error's
// Status).
func (n *negotiator) Decoder(contentType string, params map[string]string) (runtime.Decoder, error) {
	d, err := n.ClientNegotiator.Decoder(contentType, params)
	if err != nil || !n.isJSON(contentType) {
		return d, err
	}
	return typedDecoder{kinds: n.kinds, next: d}, nil
}

// StreamDecoder is the decoder of one watch: the serializer of its event
// frames and the decoder of each event's object, made as a pair sharing
// the event decoded last. client-go asks for them once per watch and
// decodes the frames one at a time (rest.Request.Watch, its
// restclientwatch.Decoder): the serializer decodes a whole event frame,
// hands client-go the event's type, and keeps the typed object for the
// object decoder that client-go calls next.
func (n *negotiator) StreamDecoder(contentType string, params map[string]string) (runtime.Decoder, runtime.Serializer, runtime.Framer, error) {
	objects, events, framer, err := n.ClientNegotiator.StreamDecoder(contentType, params)
	if err != nil || !n.isJSON(contentType) {
		return objects, events, framer, err
	}
	pair := &eventPair{kind: n.event, events: events, objects: objects}
	return pairObjects{pair}, pairEvents{pair}, framer, nil
}

// typedDecoder decodes an answer into an object of a one-pass kind with one
// call of sigs.k8s.io/json (the library client-go's JSON serializer
// decodes with), and anything else with next.
type typedDecoder struct {
	kinds map[reflect.Type]schema.GroupVersionKind
	next  runtime.Decoder
}

func (d typedDecoder) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	if into != nil && defaults == nil {
		if gvk, ok := d.kinds[reflect.TypeOf(into)]; ok {
			// Into a zero object, as controller-runtime's typed clients
			// decode: JSON decoding merges into what is there.
			reset(into)
			if obj, ok := decodeTyped(data, gvk, into); ok {
				return obj, &gvk, nil
			}
			// A fresh object for client-go's decoder: the failed pass may
			// have set fields that client-go's would leave alone.
			reset(into)
		}
	}
	return d.next.Decode(data, defaults, into)
}

// decodeTyped decodes data into obj, and reports whether it holds an
// object of kind gvk with no error. As client-go's decoder without
// conversion does, it clears the object's apiVersion and kind.
func decodeTyped(data []byte, gvk schema.GroupVersionKind, obj runtime.Object) (runtime.Object, bool) {
	if err := kjson.UnmarshalCaseSensitivePreserveInts(data, obj); err != nil {
		return nil, false
	}
	if obj.GetObjectKind().GroupVersionKind() != gvk {
		return nil, false
	}
	obj.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	return obj, true
}

// reset sets the object obj points to to its zero value.
func reset(obj runtime.Object) {
	v := reflect.ValueOf(obj)
	if v.Kind() == reflect.Pointer && !v.IsNil() {
		v.Elem().SetZero()
	}
}

// eventPair is the state one watch's two decoders share: the object of
// the event decoded last, when it was decoded in one pass.
type eventPair struct {
	kind    eventKind
	events  runtime.Serializer
	objects runtime.Decoder
	// decoded is the typed object of the last event frame, nil when the
	// frame went to client-go's decoders.
	decoded runtime.Object
	// handedOver says whether the last object pairObjects returned came
	// from the one pass (for the tests).
	handedOver bool
}

// wireEvent is a watch event as the API server writes it, its object
// decoded into the typed object already in Object.
type wireEvent struct {
	Type   watch.EventType `json:"type"`
	Object runtime.Object  `json:"object"`
}

// pairEvents decodes a frame into client-go's metav1.WatchEvent: its type
// only, when the frame decodes in one pass (its object is then kept for
// pairObjects), or all of it through client-go's serializer.
type pairEvents struct{ *eventPair }

func (p pairEvents) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	p.decoded = nil
	if got, ok := into.(*metav1.WatchEvent); ok && defaults == nil {
		obj, err := p.kind.scheme.New(p.kind.gvk)
		if err == nil {
			ev := wireEvent{Object: obj}
			if kjson.UnmarshalCaseSensitivePreserveInts(data, &ev) == nil && oneKindOfEvent(ev.Type) &&
				obj.GetObjectKind().GroupVersionKind() == p.kind.gvk {
				obj.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
				*got = metav1.WatchEvent{Type: string(ev.Type)}
				p.decoded = obj
				return got, nil, nil
			}
		}
	}
	return p.events.Decode(data, defaults, into)
}

// oneKindOfEvent reports whether an event of type t carries an object of
// the watched kind: an ERROR event carries a Status, and an unknown type
// is client-go's to refuse.
func oneKindOfEvent(t watch.EventType) bool {
	switch t {
	case watch.Added, watch.Modified, watch.Deleted, watch.Bookmark:
		return true
	}
	return false
}

func (p pairEvents) Encode(obj runtime.Object, w io.Writer) error { return p.events.Encode(obj, w) }

func (p pairEvents) Identifier() runtime.Identifier { return p.events.Identifier() }

// pairObjects returns the object pairEvents kept for the event it decoded
// last, and decodes the object with client-go's decoder when there is none.
type pairObjects struct{ *eventPair }

func (p pairObjects) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	p.handedOver = false
	if obj := p.decoded; obj != nil && into == nil && defaults == nil {
		p.decoded, p.handedOver = nil, true
		gvk := p.kind.gvk
		return obj, &gvk, nil
	}
	return p.objects.Decode(data, defaults, into)
}
