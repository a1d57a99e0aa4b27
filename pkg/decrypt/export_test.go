package decrypt

import (
	"context"
	"errors"

	"github.com/getsops/sops/v3/keyservice"
)

// DecryptFile is decrypt without its guard against panics, for the
// differential and fuzz tests: a panic there is a failure.
func (d *Decryptor) DecryptFile(data []byte, in, out Format) ([]byte, error) {
	return d.decryptFile(data, in, out)
}

// LibraryKeyService is a key service for the SOPS library that opens data
// keys with the Secret's keys, so that the tests can decrypt with the
// library as render-controller decrypted before it had its own code.
func LibraryKeyService(k *Keys) keyservice.KeyServiceClient {
	return keyservice.NewCustomLocalClient(libraryKeyServer{k})
}

type libraryKeyServer struct{ keys *Keys }

func (libraryKeyServer) Encrypt(context.Context, *keyservice.EncryptRequest) (*keyservice.EncryptResponse, error) {
	return nil, errors.New("decryption only")
}

func (s libraryKeyServer) Decrypt(_ context.Context, req *keyservice.DecryptRequest) (*keyservice.DecryptResponse, error) {
	var (
		plain []byte
		err   error
	)
	switch k := req.GetKey(); {
	case k.GetAgeKey() != nil:
		plain, err = s.keys.openAge(req.GetCiphertext())
	case k.GetPgpKey() != nil:
		plain, err = s.keys.openPGP(req.GetCiphertext())
	default:
		err = errors.New("only age and OpenPGP keys")
	}
	if err != nil {
		return nil, err
	}
	return &keyservice.DecryptResponse{Plaintext: plain}, nil
}
