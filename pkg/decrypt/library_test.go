package decrypt_test

import (
	"fmt"

	"github.com/getsops/sops/v3/aes"
	"github.com/getsops/sops/v3/keyservice"
	"github.com/getsops/sops/v3/logging"
	"github.com/sirupsen/logrus"

	"plumb.dev/pkg/decrypt"
	"plumb.dev/pkg/decrypt/decrypttest"
)

func init() {
	// The library logs each recovered data key.
	logging.SetLevel(logrus.ErrorLevel)
}

// libraryDecrypt is how render-controller decrypted with the SOPS library
// (v3.13.3) before it had its own code, the MAC unchecked: the reference
// the differential tests hold decrypt's output to.
func libraryDecrypt(keys *decrypt.Keys, data []byte, in, out decrypt.Format) (plain []byte, err error) {
	defer func() {
		if p := recover(); p != nil {
			plain, err = nil, fmt.Errorf("the library panicked: %v", p)
		}
	}()
	tree, err := decrypttest.StoreFor(in).LoadEncryptedFile(data)
	if err != nil {
		return nil, err
	}
	key, err := tree.Metadata.GetDataKeyWithKeyServices([]keyservice.KeyServiceClient{decrypt.LibraryKeyService(keys)}, nil)
	if err != nil {
		return nil, err
	}
	if _, err := tree.Decrypt(key, aes.NewCipher()); err != nil {
		return nil, err
	}
	return decrypttest.StoreFor(out).EmitPlainFile(tree.Branches)
}
