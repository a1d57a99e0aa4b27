package helmstorage

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// MaxDecodedBytes bounds what one record may decompress to before the
// SDK's driver reads it, which it does whole and unbounded: a gzip of a
// few hundred KiB fills gigabytes. A release of a large chart, whose
// record Helm stores with every template and file, stays far below.
var MaxDecodedBytes int64 = 64 << 20

// secrets is the Secrets of one namespace, as the SDK's driver asks for
// them (client-go's SecretInterface), through a controller-runtime
// client: only the calls the driver makes are implemented; the others
// panic on the nil interface. The driver passes context.Background(); the
// calls run within ctx instead.
type secrets struct {
	typedcorev1.SecretInterface
	ctx       context.Context
	c         client.Client
	r         client.Reader
	namespace string
}

func (s *secrets) Get(_ context.Context, name string, _ metav1.GetOptions) (*corev1.Secret, error) {
	sec := &corev1.Secret{}
	if err := s.r.Get(s.ctx, client.ObjectKey{Namespace: s.namespace, Name: name}, sec); err != nil {
		return nil, err
	}
	if err := checkRecord(sec); err != nil {
		return nil, err
	}
	return sec, nil
}

func (s *secrets) List(_ context.Context, opts metav1.ListOptions) (*corev1.SecretList, error) {
	sel, err := labels.Parse(opts.LabelSelector)
	if err != nil {
		return nil, err
	}
	list := &corev1.SecretList{}
	if err := s.r.List(s.ctx, list, client.InNamespace(s.namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return nil, err
	}
	for i := range list.Items {
		if err := checkRecord(&list.Items[i]); err != nil {
			return nil, err
		}
	}
	return list, nil
}

func (s *secrets) Create(_ context.Context, sec *corev1.Secret, _ metav1.CreateOptions) (*corev1.Secret, error) {
	sec.Namespace = s.namespace
	if err := s.c.Create(s.ctx, sec); err != nil {
		return nil, err
	}
	return sec, nil
}

func (s *secrets) Update(_ context.Context, sec *corev1.Secret, _ metav1.UpdateOptions) (*corev1.Secret, error) {
	sec.Namespace = s.namespace
	if err := s.c.Update(s.ctx, sec); err != nil {
		return nil, err
	}
	return sec, nil
}

func (s *secrets) Delete(_ context.Context, name string, _ metav1.DeleteOptions) error {
	sec := &corev1.Secret{}
	sec.Namespace, sec.Name = s.namespace, name
	return s.c.Delete(s.ctx, sec)
}

// errTooLarge is a record that decompresses to more than MaxDecodedBytes.
var errTooLarge = errors.New("decompresses to more than the limit")

// checkRecord refuses a record whose data would decompress to more than
// MaxDecodedBytes, reading it as the SDK's decodeRelease does: base64,
// then gzip when it starts with gzip's magic bytes. What does not decode
// is left to the driver, which says so.
func checkRecord(sec *corev1.Secret) error {
	raw, err := base64.StdEncoding.DecodeString(string(sec.Data["release"]))
	if err != nil || len(raw) < 3 || !bytes.Equal(raw[:3], []byte{0x1f, 0x8b, 0x08}) {
		return nil
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		return nil
	}
	defer zr.Close()
	n, _ := io.Copy(io.Discard, io.LimitReader(zr, MaxDecodedBytes+1))
	if n > MaxDecodedBytes {
		return fmt.Errorf("release record %s/%s %w of %d bytes", sec.Namespace, sec.Name, errTooLarge, MaxDecodedBytes)
	}
	return nil
}
