package decrypt_test

import (
	"bytes"
	"testing"

	"plumb.dev/pkg/decrypt"
	"plumb.dev/pkg/decrypt/decrypttest"
)

// FuzzDecryptMatchesLibrary feeds decrypt hostile variations of encrypted
// files: it must never panic (DecryptFile has no recover), and whenever
// the SOPS library decrypts the input, decrypt must print the same bytes.
// Seeds are the rich files of the differential test, encrypted for this
// run's keys with several rules, in every format.
func FuzzDecryptMatchesLibrary(f *testing.F) {
	age1 := decrypttest.NewAgeKey(f)
	pgp1 := decrypttest.NewPGPKey(f, "fuzz")
	keys, err := decrypt.ParseKeys("fuzz/keys", map[string][]byte{"a.agekey": []byte(age1.Identity), "p.asc": []byte(pgp1.Private)})
	if err != nil {
		f.Fatal(err)
	}
	to := decrypttest.Recipients{Age: []decrypttest.AgeKey{age1}, PGP: []decrypttest.PGPKey{pgp1}}
	for _, rule := range ruleOptions {
		for _, file := range richFiles {
			enc := decrypttest.Encrypt(f, file.name, []byte(file.plain), to, rule.opts)
			in := byte(decrypt.FormatForPath(file.name))
			f.Add(enc, in, in)
			f.Add(enc, in, byte(decrypt.JSON))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte, in, out byte) {
		if len(data) > 64<<10 {
			return // the bounds are tested elsewhere; keep each run quick
		}
		inF, outF := decrypt.Format(in%5), decrypt.Format(out%5)
		got, err := decrypt.New(keys).DecryptFile(data, inF, outF)
		want, wantErr := libraryDecrypt(keys, data, inF, outF)
		if wantErr != nil {
			return
		}
		if err != nil {
			t.Fatalf("the library decrypts it (%q), decrypt fails: %v", want, err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("printed\n%q\nthe library printed\n%q", got, want)
		}
	})
}
