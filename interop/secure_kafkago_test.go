package interop

import (
	"crypto/tls"
	"fmt"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/sasl"
	"github.com/segmentio/kafka-go/sasl/scram"
	"github.com/stretchr/testify/require"
)

// TestSecureKafkaGo: segmentio/kafka-go against the secured node, over
// SASL_SSL with SCRAM-SHA-512 (kafka-go's sasl/scram and a TLS Transport
// and Dialer) and over mTLS: alice writes with the Writer and reads in
// her group with a group Reader, which commits; a wrong password is
// kafka.SASLAuthenticationFailed; bob, and a certificate mapped to bob,
// get kafka.TopicAuthorizationFailed.
func TestSecureKafkaGo(t *testing.T) {
	s := startSecureNode(t)
	scram512 := func(user, password string) sasl.Mechanism {
		m, err := scram.Mechanism(scram.SHA512, user, password)
		require.NoError(t, err)
		return m
	}
	cases := []struct {
		name string
		addr string
		mech sasl.Mechanism
		tls  *tls.Config
		// want is nil for a round trip, else the error the Writer gets
		// (see below for a user without ACLs).
		want error
	}{
		{"sasl-ssl-scram-sha-512", s.saslSSL, scram512(secAlice, secAlicePassword), s.tlsConfig(t, ""), nil},
		{"mtls", s.mTLS, nil, s.tlsConfig(t, secAlice), nil},
		{"sasl-ssl-wrong-password", s.saslSSL, scram512(secAlice, secWrongPassword), s.tlsConfig(t, ""), kafka.SASLAuthenticationFailed},
		{"sasl-ssl-no-acl", s.saslSSL, scram512(secBob, secBobPassword), s.tlsConfig(t, ""), kafka.TopicAuthorizationFailed},
		{"mtls-no-acl", s.mTLS, nil, s.tlsConfig(t, secBob), kafka.TopicAuthorizationFailed},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			topic, group := fmt.Sprintf("%skafkago-%d", secPrefix, i), fmt.Sprintf("%skafkago-group-%d", secPrefix, i)
			s.createTopic(t, topic)
			transport := &kafka.Transport{DialTimeout: 5 * time.Second, SASL: c.mech, TLS: c.tls}
			defer transport.CloseIdleConnections()
			w := &kafka.Writer{Addr: kafka.TCP(c.addr), Topic: topic, Transport: transport, Balancer: &kafka.LeastBytes{},
				BatchTimeout: 5 * time.Millisecond, RequiredAcks: kafka.RequireAll, MaxAttempts: 2}
			defer w.Close()
			rs := genRecords(uint64(2600+i), 15, genOpts{partitions: 1, timestamps: true})
			msgs := make([]kafka.Message, len(rs))
			for j := range rs {
				msgs[j] = toKafkago(rs[j], j)
			}
			err := w.WriteMessages(secCtx(t), msgs...)
			if c.want == kafka.TopicAuthorizationFailed {
				// The Writer finds partitions in its Transport's cache of
				// Metadata for all topics, which leaves out the topics the
				// caller may not describe (as Kafka does): the topic is
				// unknown to it. Metadata for the topic itself and a
				// Produce on a Conn get the authorization error.
				require.ErrorIs(t, err, kafka.UnknownTopicOrPartition)
				dialer := &kafka.Dialer{Timeout: 5 * time.Second, SASLMechanism: c.mech, TLS: c.tls}
				_, err = dialer.LookupPartitions(secCtx(t), "tcp", c.addr, topic)
				require.ErrorIs(t, err, c.want)
				host, port := splitAddr(t, c.addr)
				conn, err := dialer.DialPartition(secCtx(t), "tcp", c.addr, kafka.Partition{Topic: topic, ID: 0,
					Leader: kafka.Broker{Host: host, Port: port, ID: int(s.NodeID())}})
				require.NoError(t, err)
				defer conn.Close()
				require.NoError(t, conn.SetDeadline(time.Now().Add(opTimeout)))
				_, err = conn.WriteMessages(msgs...)
				require.ErrorIs(t, err, c.want)
			} else if c.want != nil {
				require.ErrorIs(t, err, c.want)
			}
			if c.want != nil {
				require.Zero(t, s.endOffset(t, topic), "nothing was written")
				return
			}
			require.NoError(t, err)

			r := kafka.NewReader(kafka.ReaderConfig{
				Brokers: []string{c.addr}, Topic: topic, GroupID: group, StartOffset: kafka.FirstOffset,
				Dialer:   &kafka.Dialer{Timeout: 5 * time.Second, SASLMechanism: c.mech, TLS: c.tls},
				MinBytes: 1, MaxBytes: 1 << 20, MaxWait: 200 * time.Millisecond,
			})
			defer func() { require.NoError(t, r.Close()) }()
			ctx := secCtx(t)
			var got []rec
			for len(got) < len(rs) {
				m, err := r.ReadMessage(ctx) // commits at once (CommitInterval 0)
				require.NoError(t, err, "read %d of %d", len(got), len(rs))
				got = append(got, fromKafkago(m))
			}
			requireSameRecords(t, rs, got, zeros(1), checkOpts{})
			require.EqualValues(t, len(rs), s.committed(t, group, topic))
		})
	}
}
