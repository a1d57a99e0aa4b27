package decrypt

import "fmt"

// combineShares recovers a data key split by Shamir's secret sharing over
// GF(2^8) (the AES field, as SOPS splits it across key groups): each share
// is the polynomial's value for every byte of the key followed by its x
// coordinate. The key is the polynomial at 0, by Lagrange interpolation.
// The errors are the library's cases: fewer than two shares, shares of
// different lengths, a repeated x.
func combineShares(shares [][]byte) ([]byte, error) {
	if len(shares) < 2 {
		return nil, fmt.Errorf("less than two Shamir shares cannot recover the data key")
	}
	n := len(shares[0])
	if n < 2 {
		return nil, fmt.Errorf("a Shamir share is shorter than two bytes")
	}
	xs := make([]byte, len(shares))
	seen := map[byte]bool{}
	for i, s := range shares {
		if len(s) != n {
			return nil, fmt.Errorf("the Shamir shares differ in length")
		}
		x := s[n-1]
		if seen[x] {
			return nil, fmt.Errorf("two Shamir shares have the same x")
		}
		seen[x] = true
		xs[i] = x
	}
	// basis[i] is the Lagrange basis polynomial i at 0: the product over
	// j != i of x_j / (x_i - x_j); subtraction is XOR in GF(2^8).
	basis := make([]byte, len(shares))
	for i := range shares {
		b := byte(1)
		for j := range shares {
			if i != j {
				b = gfMul(b, gfMul(xs[j], gfInv(xs[i]^xs[j])))
			}
		}
		basis[i] = b
	}
	key := make([]byte, n-1)
	for k := range key {
		var v byte
		for i, s := range shares {
			v ^= gfMul(s[k], basis[i])
		}
		key[k] = v
	}
	return key, nil
}

// gfMul multiplies in GF(2^8) modulo x^8 + x^4 + x^3 + x + 1.
func gfMul(a, b byte) byte {
	var p byte
	for b != 0 {
		if b&1 != 0 {
			p ^= a
		}
		carry := a & 0x80
		a <<= 1
		if carry != 0 {
			a ^= 0x1b
		}
		b >>= 1
	}
	return p
}

// gfInv is a^254, the inverse of a non-zero a (a^255 = 1); xs differ, so
// it is never asked for 0.
func gfInv(a byte) byte {
	r := byte(1)
	for range 254 {
		r = gfMul(r, a)
	}
	return r
}
