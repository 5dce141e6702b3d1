package interop

import (
	"crypto/tls"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// TestSecureFranz: kgo (franz-go) against the secured node, over
// SASL_SSL with SCRAM-SHA-512 and SCRAM-SHA-256 and over mTLS: alice
// produces (idempotently: WRITE on the topic is enough, KIP-679) and
// consumes in her group, committing; a wrong password is
// SASL_AUTHENTICATION_FAILED; bob, authenticated without ACLs, gets
// TOPIC_AUTHORIZATION_FAILED, and so does a certificate mapped to him;
// on the mTLS listener a client without a certificate, or with one from
// another CA, cannot connect.
func TestSecureFranz(t *testing.T) {
	s := startSecureNode(t)
	sha512 := func(user, password string) kgo.Opt {
		return kgo.SASL(scram.Auth{User: user, Pass: password}.AsSha512Mechanism())
	}
	sha256 := func(user, password string) kgo.Opt {
		return kgo.SASL(scram.Auth{User: user, Pass: password}.AsSha256Mechanism())
	}
	cases := []struct {
		name string
		addr string
		opts []kgo.Opt
		// want is nil for a round trip, else the error produce gets.
		want error
	}{
		{"sasl-ssl-scram-sha-512", s.saslSSL, []kgo.Opt{kgo.DialTLSConfig(s.tlsConfig(t, "")), sha512(secAlice, secAlicePassword)}, nil},
		{"sasl-ssl-scram-sha-256", s.saslSSL, []kgo.Opt{kgo.DialTLSConfig(s.tlsConfig(t, "")), sha256(secAlice, secAlicePassword)}, nil},
		{"sasl-plaintext-scram-sha-512", s.saslPlaintext, []kgo.Opt{sha512(secAlice, secAlicePassword)}, nil},
		{"mtls", s.mTLS, []kgo.Opt{kgo.DialTLSConfig(s.tlsConfig(t, secAlice))}, nil},
		{"sasl-ssl-wrong-password", s.saslSSL, []kgo.Opt{kgo.DialTLSConfig(s.tlsConfig(t, "")), sha512(secAlice, secWrongPassword)}, kerr.SaslAuthenticationFailed},
		{"sasl-ssl-unknown-user", s.saslSSL, []kgo.Opt{kgo.DialTLSConfig(s.tlsConfig(t, "")), sha512("carol", secAlicePassword)}, kerr.SaslAuthenticationFailed},
		{"sasl-ssl-no-acl", s.saslSSL, []kgo.Opt{kgo.DialTLSConfig(s.tlsConfig(t, "")), sha512(secBob, secBobPassword)}, kerr.TopicAuthorizationFailed},
		{"mtls-no-acl", s.mTLS, []kgo.Opt{kgo.DialTLSConfig(s.tlsConfig(t, secBob))}, kerr.TopicAuthorizationFailed},
	}
	t.Run("mtls-no-certificate", func(t *testing.T) {
		cl := newClient(t, []string{s.mTLS}, kgo.DialTLSConfig(s.tlsConfig(t, "")), kgo.RequestRetries(1), kgo.RetryTimeout(2*time.Second))
		err := cl.Ping(secCtx(t))
		require.ErrorContains(t, err, "tls: certificate required")
	})
	t.Run("mtls-certificate-of-another-ca", func(t *testing.T) {
		cfg := s.tlsConfig(t, "")
		c, err := tls.X509KeyPair(newTestCA(t, "other-ca").issue(t, secAlice))
		require.NoError(t, err)
		// Sent whatever CAs the server names (crypto/tls would
		// otherwise send none).
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &c, nil }
		cl := newClient(t, []string{s.mTLS}, kgo.DialTLSConfig(cfg), kgo.RequestRetries(1), kgo.RetryTimeout(2*time.Second))
		err = cl.Ping(secCtx(t))
		require.ErrorContains(t, err, "tls: unknown certificate authority")
	})
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			topic, group := fmt.Sprintf("%skgo-%d", secPrefix, i), fmt.Sprintf("%skgo-group-%d", secPrefix, i)
			s.createTopic(t, topic)
			ctx := secCtx(t)
			opts := append([]kgo.Opt{kgo.RequestRetries(2)}, c.opts...)
			prod := newClient(t, []string{c.addr}, opts...)
			rs := genRecords(uint64(2400+i), 20, genOpts{partitions: 1})
			krs := make([]*kgo.Record, len(rs))
			for j, r := range rs {
				krs[j] = toKgo(topic, r)
			}
			if c.want == kerr.SaslAuthenticationFailed {
				// A refused authentication fails a request at once;
				// a buffered record is retried until its timeout.
				require.ErrorIs(t, prod.Ping(ctx), c.want)
				require.Zero(t, s.endOffset(t, topic), "nothing was written")
				return
			}
			from := time.Now()
			err := prod.ProduceSync(ctx, krs...).FirstErr()
			if c.want != nil {
				require.ErrorIs(t, err, c.want)
				require.Zero(t, s.endOffset(t, topic), "nothing was written")
				return
			}
			require.NoError(t, err)
			to := time.Now()
			cons := newClient(t, []string{c.addr}, append(opts, kgo.ConsumeTopics(topic), kgo.ConsumerGroup(group),
				kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())...)
			var got []rec
			for len(got) < len(rs) {
				fs := cons.PollFetches(ctx)
				require.NoError(t, fs.Err())
				fs.EachRecord(func(r *kgo.Record) { got = append(got, fromKgo(r)) })
			}
			requireSameRecords(t, rs, got, zeros(1), checkOpts{nullsDistinct: true, from: from, to: to})
			require.NoError(t, cons.CommitUncommittedOffsets(ctx))
			require.EqualValues(t, len(rs), s.committed(t, group, topic))
		})
	}
}
