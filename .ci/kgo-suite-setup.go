//go:build ignore

// kgo-suite-setup prepares what .ci/kgo-suite's secured runs need:
//
//	go run .ci/kgo-suite-setup.go scram HOST:PORT USER PASSWORD
//	go run .ci/kgo-suite-setup.go certs DIR CN
//	go run .ci/kgo-suite-setup.go acls HOST:PORT PRINCIPAL
//
// scram creates a SCRAM-SHA-256 and a SCRAM-SHA-512 credential for USER
// through AlterUserScramCredentials (KIP-554); acls grants PRINCIPAL ALL
// on every topic, group and transactional id (literal "*") and on the
// cluster through CreateAcls, so that a client authenticated as PRINCIPAL
// is authorized by ACLs rather than as a super user. Both go to a listener
// whose principal may alter them (the PLAINTEXT one, whose User:ANONYMOUS
// is a super user or where no authorizer runs) and retry for 20 s. certs
// writes DIR/ca.pem, DIR/server.pem (key and certificate, for 127.0.0.1
// and localhost: ssl.keystore.type=PEM) and DIR/client-cert.pem and
// DIR/client-key.pem, a client certificate whose subject is CN=CN.
package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func main() {
	var err error
	switch {
	case len(os.Args) == 5 && os.Args[1] == "scram":
		err = scram(os.Args[2], os.Args[3], os.Args[4])
	case len(os.Args) == 4 && os.Args[1] == "certs":
		err = certs(os.Args[2], os.Args[3])
	case len(os.Args) == 4 && os.Args[1] == "acls":
		err = acls(os.Args[2], os.Args[3])
	default:
		fmt.Fprintln(os.Stderr, "usage: go run .ci/kgo-suite-setup.go scram HOST:PORT USER PASSWORD | certs DIR CN | acls HOST:PORT PRINCIPAL")
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// retry calls f until it succeeds or ctx ends.
func retry(ctx context.Context, what string, f func() error) error {
	for {
		err := f()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		fmt.Fprintf(os.Stderr, "%s: retrying: %v\n", what, err)
		time.Sleep(200 * time.Millisecond)
	}
}

func admin(addr string) (*kadm.Client, func(), error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return nil, nil, err
	}
	return kadm.NewClient(cl), cl.Close, nil
}

func scram(addr, user, password string) error {
	adm, done, err := admin(addr)
	if err != nil {
		return err
	}
	defer done()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// One mechanism a request: Kafka refuses a user altered twice in one
	// request (DUPLICATE_RESOURCE).
	for _, m := range []kadm.ScramMechanism{kadm.ScramSha256, kadm.ScramSha512} {
		err := retry(ctx, fmt.Sprintf("%s credential for %s", m, user), func() error {
			// Fresh each time: kadm fills in the salt it draws.
			upsert := kadm.UpsertSCRAM{User: user, Mechanism: m, Iterations: 4096, Password: password}
			res, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{upsert})
			if err != nil {
				return err
			}
			return res.Error()
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func acls(addr, principal string) error {
	adm, done, err := admin(addr)
	if err != nil {
		return err
	}
	defer done()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	grant := kadm.NewACLs().Allow(principal).ResourcePatternType(kadm.ACLPatternLiteral).
		Topics("*").Groups("*").TransactionalIDs("*").Clusters().Operations(kadm.OpAll)
	return retry(ctx, "ACLs for "+principal, func() error {
		res, err := adm.CreateACLs(ctx, grant)
		if err != nil {
			return err
		}
		for _, r := range res {
			if r.Err != nil {
				return r.Err
			}
		}
		return nil
	})
}

func certs(dir, cn string) error {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "strata-kgo-suite-ca"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(7 * 24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return err
	}
	leaf := func(serial int64, cn string, hosts ...string) (certPEM, keyPEM []byte, err error) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, nil, err
		}
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial),
			Subject:      pkix.Name{CommonName: cn},
			NotBefore:    time.Now().Add(-time.Hour),
			NotAfter:     time.Now().Add(7 * 24 * time.Hour),
			KeyUsage:     x509.KeyUsageDigitalSignature,
			ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		}
		for _, h := range hosts {
			if ip := net.ParseIP(h); ip != nil {
				tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
			} else {
				tmpl.DNSNames = append(tmpl.DNSNames, h)
			}
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			return nil, nil, err
		}
		pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			return nil, nil, err
		}
		return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
			pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8}), nil
	}
	serverCert, serverKey, err := leaf(2, "strata-kgo-suite", "127.0.0.1", "localhost")
	if err != nil {
		return err
	}
	clientCert, clientKey, err := leaf(3, cn)
	if err != nil {
		return err
	}
	for name, data := range map[string][]byte{
		"ca.pem":          pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		"server.pem":      append(serverKey, serverCert...),
		"client-cert.pem": clientCert,
		"client-key.pem":  clientKey,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return err
		}
	}
	return nil
}
