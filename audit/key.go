package audit

import (
	"bytes"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
)

// Signature algorithms.
const (
	AlgHMAC    = "hmac-sha256"
	AlgEd25519 = "ed25519"
)

// minHMACKey is the shortest HMAC key accepted, in bytes.
const minHMACKey = 32

// Key signs exports and checks their signatures. An Ed25519 public key
// only checks.
type Key struct {
	alg  string
	hmac []byte
	priv ed25519.PrivateKey
	pub  ed25519.PublicKey
	id   string
}

// LoadKey reads a key file: a PEM "PRIVATE KEY" (PKCS #8) or "PUBLIC
// KEY" (PKIX) holding an Ed25519 key (openssl genpkey -algorithm
// ed25519), or else the secret of an HMAC-SHA256 key, at least 32 bytes
// (surrounding white space is not part of it).
func LoadKey(path string) (*Key, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("audit key: %w", err)
	}
	if block, _ := pem.Decode(b); block != nil {
		switch block.Type {
		case "PRIVATE KEY":
			k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
			priv, err := asEd25519[ed25519.PrivateKey](path, k, err)
			if err != nil {
				return nil, err
			}
			pub := priv.Public().(ed25519.PublicKey)
			return &Key{alg: AlgEd25519, priv: priv, pub: pub, id: keyID(pub)}, nil
		case "PUBLIC KEY":
			k, err := x509.ParsePKIXPublicKey(block.Bytes)
			pub, err := asEd25519[ed25519.PublicKey](path, k, err)
			if err != nil {
				return nil, err
			}
			return &Key{alg: AlgEd25519, pub: pub, id: keyID(pub)}, nil
		}
		return nil, fmt.Errorf("audit key %s: a PEM %q: want PRIVATE KEY or PUBLIC KEY (Ed25519)", path, block.Type)
	}
	secret := bytes.TrimSpace(b)
	if len(secret) < minHMACKey {
		return nil, fmt.Errorf("audit key %s: an HMAC key needs at least %d bytes, the file holds %d", path, minHMACKey, len(secret))
	}
	return &Key{alg: AlgHMAC, hmac: secret, id: keyID(append([]byte("memgate audit hmac key\n"), secret...))}, nil
}

// asEd25519 is the key parsed from a PEM block of the key file at path as
// an Ed25519 key of type T, or why it is not one.
func asEd25519[T ed25519.PrivateKey | ed25519.PublicKey](path string, k any, err error) (T, error) {
	if err != nil {
		return nil, fmt.Errorf("audit key %s: %w", path, err)
	}
	key, ok := k.(T)
	if !ok {
		return nil, fmt.Errorf("audit key %s: a %T, not an Ed25519 key", path, k)
	}
	return key, nil
}

// NewHMACKey returns an HMAC-SHA256 key (tests, and keys kept elsewhere).
func NewHMACKey(secret []byte) *Key {
	return &Key{alg: AlgHMAC, hmac: secret, id: keyID(append([]byte("memgate audit hmac key\n"), secret...))}
}

// NewEd25519Key returns a signing key.
func NewEd25519Key(priv ed25519.PrivateKey) *Key {
	pub := priv.Public().(ed25519.PublicKey)
	return &Key{alg: AlgEd25519, priv: priv, pub: pub, id: keyID(pub)}
}

// keyID names a key without revealing it: the first 8 bytes of a SHA-256.
func keyID(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:8])
}

// Alg is the key's algorithm; ID names it.
func (k *Key) Alg() string { return k.alg }
func (k *Key) ID() string  { return k.id }

// Sign signs a digest.
func (k *Key) Sign(digest []byte) ([]byte, error) {
	switch {
	case k.alg == AlgHMAC:
		m := hmac.New(sha256.New, k.hmac)
		m.Write(digest)
		return m.Sum(nil), nil
	case k.priv != nil:
		return ed25519.Sign(k.priv, digest), nil
	}
	return nil, errors.New("an Ed25519 public key cannot sign: give the private key")
}

// Verify checks a signature of digest made with alg.
func (k *Key) Verify(alg string, digest, sig []byte) error {
	if alg != k.alg {
		return fmt.Errorf("signed with %s, the key is %s", alg, k.alg)
	}
	switch k.alg {
	case AlgHMAC:
		m := hmac.New(sha256.New, k.hmac)
		m.Write(digest)
		if !hmac.Equal(m.Sum(nil), sig) {
			return errors.New("the HMAC does not match: the file was changed, or signed with another key")
		}
	case AlgEd25519:
		if !ed25519.Verify(k.pub, digest, sig) {
			return errors.New("the Ed25519 signature does not match: the file was changed, or signed with another key")
		}
	}
	return nil
}
