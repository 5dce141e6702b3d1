package node

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/pbkdf2"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"errors"
	"fmt"
	"hash"
)

// Encrypted PKCS#8 private keys (RFC 5958's EncryptedPrivateKeyInfo),
// which Kafka's PEM keystores take with ssl.key.password and Go's x509
// does not read. Only PBES2 (RFC 8018) with PBKDF2 and AES-CBC is
// supported: what `openssl pkcs8 -topk8` (OpenSSL 1.1 and later) and
// Java's PBEWithHmacSHA256AndAES_256 write. The legacy PBES1 schemes
// (DES, RC2, MD5) are refused.

var (
	oidPBES2      = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 13}
	oidPBKDF2     = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 12}
	oidHMACSHA1   = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 7}
	oidHMACSHA256 = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 9}
	oidHMACSHA384 = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 10}
	oidHMACSHA512 = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 11}
	oidAES128CBC  = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 2}
	oidAES192CBC  = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 22}
	oidAES256CBC  = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 42}
)

// maxPBKDF2Iterations bounds the work a key file can ask for.
const maxPBKDF2Iterations = 10_000_000

type encryptedPrivateKeyInfo struct {
	Algorithm pkix.AlgorithmIdentifier
	Data      []byte
}

type pbes2Params struct {
	KeyDerivation pkix.AlgorithmIdentifier
	Encryption    pkix.AlgorithmIdentifier
}

type pbkdf2Params struct {
	Salt       []byte
	Iterations int
	KeyLength  int                      `asn1:"optional"`
	PRF        pkix.AlgorithmIdentifier `asn1:"optional"`
}

// errBadKeyPassword is what a wrong ssl.key.password gives.
var errBadKeyPassword = errors.New(KeySSLKeyPassword + " does not decrypt the key")

// decryptPKCS8 decrypts an EncryptedPrivateKeyInfo (DER) into a PKCS#8
// PrivateKeyInfo (DER).
func decryptPKCS8(der, password []byte) ([]byte, error) {
	var info encryptedPrivateKeyInfo
	if rest, err := asn1.Unmarshal(der, &info); err != nil || len(rest) > 0 {
		return nil, errors.New("the ENCRYPTED PRIVATE KEY block does not parse")
	}
	if !info.Algorithm.Algorithm.Equal(oidPBES2) {
		return nil, fmt.Errorf("the key is encrypted with %v, not PBES2: re-encrypt it with `openssl pkcs8 -topk8 -v2 aes-256-cbc`", info.Algorithm.Algorithm)
	}
	var params pbes2Params
	if _, err := asn1.Unmarshal(info.Algorithm.Parameters.FullBytes, &params); err != nil {
		return nil, errors.New("the key's PBES2 parameters do not parse")
	}
	if !params.KeyDerivation.Algorithm.Equal(oidPBKDF2) {
		return nil, fmt.Errorf("the key's PBES2 key derivation %v is not PBKDF2", params.KeyDerivation.Algorithm)
	}
	var kdf pbkdf2Params
	if _, err := asn1.Unmarshal(params.KeyDerivation.Parameters.FullBytes, &kdf); err != nil {
		return nil, errors.New("the key's PBKDF2 parameters do not parse")
	}
	if kdf.Iterations < 1 || kdf.Iterations > maxPBKDF2Iterations {
		return nil, fmt.Errorf("the key's PBKDF2 iteration count %d is out of [1,%d]", kdf.Iterations, maxPBKDF2Iterations)
	}
	var prf func() hash.Hash
	switch alg := kdf.PRF.Algorithm; {
	case len(alg) == 0, alg.Equal(oidHMACSHA1):
		prf = sha1.New
	case alg.Equal(oidHMACSHA256):
		prf = sha256.New
	case alg.Equal(oidHMACSHA384):
		prf = sha512.New384
	case alg.Equal(oidHMACSHA512):
		prf = sha512.New
	default:
		return nil, fmt.Errorf("the key's PBKDF2 pseudo-random function %v is not supported", alg)
	}
	var keyLen int
	switch alg := params.Encryption.Algorithm; {
	case alg.Equal(oidAES128CBC):
		keyLen = 16
	case alg.Equal(oidAES192CBC):
		keyLen = 24
	case alg.Equal(oidAES256CBC):
		keyLen = 32
	default:
		return nil, fmt.Errorf("the key's cipher %v is not supported (AES-CBC is)", alg)
	}
	if kdf.KeyLength != 0 && kdf.KeyLength != keyLen {
		return nil, fmt.Errorf("the key's PBKDF2 key length %d does not fit its cipher", kdf.KeyLength)
	}
	var iv []byte
	if _, err := asn1.Unmarshal(params.Encryption.Parameters.FullBytes, &iv); err != nil || len(iv) != aes.BlockSize {
		return nil, errors.New("the key's AES-CBC IV does not parse")
	}
	if len(info.Data) == 0 || len(info.Data)%aes.BlockSize != 0 {
		return nil, errors.New("the key's encrypted data is not a whole number of AES blocks")
	}
	key, err := pbkdf2.Key(prf, string(password), kdf.Salt, kdf.Iterations, keyLen)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	plain := make([]byte, len(info.Data))
	cipher.NewCBCDecrypter(block, iv).CryptBlocks(plain, info.Data)
	// PKCS#7 padding: a wrong password leaves garbage here (or, 1 time in
	// 256, a valid-looking pad that the PKCS#8 parse below refuses).
	pad := int(plain[len(plain)-1])
	if pad < 1 || pad > aes.BlockSize {
		return nil, errBadKeyPassword
	}
	for _, b := range plain[len(plain)-pad:] {
		if int(b) != pad {
			return nil, errBadKeyPassword
		}
	}
	plain = plain[:len(plain)-pad]
	if _, err := x509.ParsePKCS8PrivateKey(plain); err != nil {
		return nil, errBadKeyPassword
	}
	return plain, nil
}
