package interop

import (
	"crypto/tls"
	"fmt"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/stretchr/testify/require"
	"github.com/xdg-go/scram"
)

// saramaSCRAM is sarama's SCRAMClient over xdg-go/scram (sarama leaves
// the SCRAM exchange to the application: Net.SASL.SCRAMClientGeneratorFunc).
type saramaSCRAM struct {
	hash scram.HashGeneratorFcn
	conv *scram.ClientConversation
}

func (c *saramaSCRAM) Begin(user, password, authzID string) error {
	cl, err := c.hash.NewClient(user, password, authzID)
	if err != nil {
		return err
	}
	c.conv = cl.NewConversation()
	return nil
}

func (c *saramaSCRAM) Step(challenge string) (string, error) { return c.conv.Step(challenge) }

func (c *saramaSCRAM) Done() bool { return c.conv.Done() }

// saramaSASL sets cfg up for SASL SCRAM-SHA-512 as user, over TLS when
// tlsCfg is not nil.
func saramaSASL(cfg *sarama.Config, user, password string, tlsCfg *tls.Config) {
	cfg.Net.SASL.Enable = true
	cfg.Net.SASL.Handshake = true
	cfg.Net.SASL.Version = sarama.SASLHandshakeV1
	cfg.Net.SASL.Mechanism = sarama.SASLTypeSCRAMSHA512
	cfg.Net.SASL.User, cfg.Net.SASL.Password = user, password
	cfg.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &saramaSCRAM{hash: scram.SHA512} }
	if tlsCfg != nil {
		cfg.Net.TLS.Enable, cfg.Net.TLS.Config = true, tlsCfg
	}
}

// TestSecureSarama: IBM/sarama against the secured node, over SASL_SSL
// with SCRAM-SHA-512 (handshake v1, and v0 with raw tokens) and over
// mTLS: alice produces with the sync producer, consumes and commits her
// group's offset; a wrong password is ErrSASLAuthenticationFailed when
// the client starts; bob, and a certificate mapped to bob, get
// ErrTopicAuthorizationFailed.
func TestSecureSarama(t *testing.T) {
	saramaLog.logTo(t)
	s := startSecureNode(t)
	cases := []struct {
		name   string
		addr   string
		config func(*sarama.Config)
		// want is nil for a round trip; else the error the client's start
		// (authentication) or its first produce (authorization) gets.
		want error
	}{
		{"sasl-ssl-scram-sha-512", s.saslSSL, func(c *sarama.Config) { saramaSASL(c, secAlice, secAlicePassword, s.tlsConfig(t, "")) }, nil},
		{"sasl-ssl-scram-sha-512-handshake-v0", s.saslSSL, func(c *sarama.Config) {
			saramaSASL(c, secAlice, secAlicePassword, s.tlsConfig(t, ""))
			c.Net.SASL.Version = sarama.SASLHandshakeV0
			c.ApiVersionsRequest = false // sarama's rule for SASL v0, as Kafka before 1.0 had it
		}, nil},
		{"mtls", s.mTLS, func(c *sarama.Config) { c.Net.TLS.Enable, c.Net.TLS.Config = true, s.tlsConfig(t, secAlice) }, nil},
		{"sasl-ssl-wrong-password", s.saslSSL, func(c *sarama.Config) { saramaSASL(c, secAlice, secWrongPassword, s.tlsConfig(t, "")) },
			sarama.ErrSASLAuthenticationFailed},
		{"sasl-ssl-no-acl", s.saslSSL, func(c *sarama.Config) { saramaSASL(c, secBob, secBobPassword, s.tlsConfig(t, "")) },
			sarama.ErrTopicAuthorizationFailed},
		{"mtls-no-acl", s.mTLS, func(c *sarama.Config) { c.Net.TLS.Enable, c.Net.TLS.Config = true, s.tlsConfig(t, secBob) },
			sarama.ErrTopicAuthorizationFailed},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			topic, group := fmt.Sprintf("%ssarama-%d", secPrefix, i), fmt.Sprintf("%ssarama-group-%d", secPrefix, i)
			s.createTopic(t, topic)
			cfg := saramaConfig(sarama.V3_6_0_0)
			cfg.Metadata.Retry.Max = 2
			c.config(cfg)
			client, err := sarama.NewClient([]string{c.addr}, cfg)
			if c.want == sarama.ErrSASLAuthenticationFailed {
				require.ErrorIs(t, err, c.want)
				return
			}
			require.NoError(t, err)
			t.Cleanup(func() { _ = client.Close() })
			prod, err := sarama.NewSyncProducerFromClient(client)
			require.NoError(t, err)
			defer func() { require.NoError(t, prod.Close()) }()
			rs := genRecords(uint64(2500+i), 15, genOpts{partitions: 1, timestamps: true})
			msgs := make([]*sarama.ProducerMessage, len(rs))
			for j, r := range rs {
				msgs[j] = toSarama(topic, r)
			}
			if c.want != nil {
				// One record: after the first refusal sarama's circuit
				// breaker answers the rest itself.
				_, _, err = prod.SendMessage(msgs[0])
				require.ErrorIs(t, err, c.want)
				require.Zero(t, s.endOffset(t, topic), "nothing was written")
				return
			}
			require.NoError(t, prod.SendMessages(msgs))
			for j, m := range msgs {
				rs[j].Offset = m.Offset
			}
			got := consumeSarama(t, c.addr, cfg, topic, map[int32]int64{0: sarama.OffsetOldest}, map[int32]int{0: len(rs)})
			requireSameRecords(t, rs, got, zeros(1), checkOpts{offsetsKnown: true})

			om, err := sarama.NewOffsetManagerFromClient(group, client)
			require.NoError(t, err)
			pom, err := om.ManagePartition(topic, 0)
			require.NoError(t, err)
			pom.MarkOffset(int64(len(rs)), "")
			om.Commit()
			require.NoError(t, pom.Close())
			require.NoError(t, om.Close())
			require.Eventually(t, func() bool { return s.committed(t, group, topic) == int64(len(rs)) }, opTimeout, 50*time.Millisecond)
		})
	}
}
