package typedwatch

import "k8s.io/apimachinery/pkg/runtime"

// HandedOver says whether the object decoder of a watch (the first value
// of a negotiator's StreamDecoder) returned its last object from the one
// pass.
func HandedOver(objects runtime.Decoder) bool { return objects.(pairObjects).handedOver }
