package node_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/node"
)

// TestE2ESecurityAdmin: kadm's ACL, SCRAM and client quota calls against a
// node. ACLs are created, described by filter and deleted by filter;
// SCRAM users are upserted with salted passwords computed by kadm and
// described (mechanisms and iterations only), with Kafka's per-user
// errors; quotas are altered and described. Everything survives a
// restart, which replays the metadata log.
func TestE2ESecurityAdmin(t *testing.T) {
	dir := t.TempDir()
	start := func() *node.Node {
		cfg := node.DefaultConfig()
		cfg.NodeID = 1
		cfg.Listener, cfg.ControllerListener, cfg.MetricsListener = "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0"
		cfg.LogDir = dir
		n, err := node.Start(cfg, slog.New(slog.NewTextHandler(testWriter{t}, nil)))
		require.NoError(t, err)
		waitActive(t, n)
		return n
	}
	n := start()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	adm := newAdmin(t, n.Addr())

	// ACLs: alice reads orders*, bob writes payments; one is refused.
	acls := kadm.NewACLs().Allow("User:alice").Topics("orders").ResourcePatternType(kadm.ACLPatternPrefixed).
		Operations(kadm.OpRead, kadm.OpDescribe)
	created, err := adm.CreateACLs(ctx, acls)
	require.NoError(t, err)
	require.Len(t, created, 2)
	for _, c := range created {
		require.NoError(t, c.Err)
	}
	bob := kadm.NewACLs().Allow("User:bob").Topics("payments").Operations(kadm.OpWrite)
	created, err = adm.CreateACLs(ctx, bob)
	require.NoError(t, err)
	require.NoError(t, created[0].Err)

	describeAll := kadm.NewACLs().AnyResource().ResourcePatternType(kadm.ACLPatternAny).
		Allow().AllowHosts().Deny().DenyHosts().Operations(kadm.OpAny)
	describedACLs := func() []string {
		results, err := adm.DescribeACLs(ctx, describeAll)
		require.NoError(t, err)
		var out []string
		for _, r := range results {
			require.NoError(t, r.Err)
			for _, d := range r.Described {
				out = append(out, d.Principal+" "+d.Operation.String()+" "+d.Type.String()+":"+d.Pattern.String()+":"+d.Name)
			}
		}
		return out
	}
	allACLs := []string{
		"User:alice DESCRIBE TOPIC:PREFIXED:orders",
		"User:alice READ TOPIC:PREFIXED:orders",
		"User:bob WRITE TOPIC:LITERAL:payments",
	}
	require.Eventually(t, func() bool { return len(describedACLs()) == 3 }, e2eTimeout, 20*time.Millisecond)
	require.ElementsMatch(t, allACLs, describedACLs())

	// MATCH: the bindings that apply to orders-eu.
	match, err := adm.DescribeACLs(ctx, kadm.NewACLs().Topics("orders-eu").ResourcePatternType(kadm.ACLPatternMatch).
		Allow().AllowHosts().Deny().DenyHosts().Operations(kadm.OpAny))
	require.NoError(t, err)
	require.Len(t, match[0].Described, 2)

	// Delete bob's by principal filter.
	deleted, err := adm.DeleteACLs(ctx, kadm.NewACLs().AnyResource().ResourcePatternType(kadm.ACLPatternAny).
		Allow("User:bob").AllowHosts().Operations(kadm.OpAny))
	require.NoError(t, err)
	require.Len(t, deleted, 1)
	require.NoError(t, deleted[0].Err)
	require.Len(t, deleted[0].Deleted, 1)
	require.Equal(t, "payments", deleted[0].Deleted[0].Name)
	require.Eventually(t, func() bool { return len(describedACLs()) == 2 }, e2eTimeout, 20*time.Millisecond)

	// SCRAM: kadm salts the passwords client-side.
	altered, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{
		{User: "alice", Mechanism: kadm.ScramSha512, Iterations: 8192, Password: "alice-secret"},
		{User: "bob", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "bob-secret"},
	})
	require.NoError(t, err)
	require.NoError(t, altered["alice"].Err)
	require.NoError(t, altered["bob"].Err)
	// kadm checks iterations itself; the server's own check, raw.
	raw := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	raw.Upsertions = []kmsg.AlterUserSCRAMCredentialsRequestUpsertion{{Name: "carol", Mechanism: 1, Iterations: 100,
		Salt: []byte("salt"), SaltedPassword: make([]byte, 32)}}
	rawResp, err := raw.RequestWith(ctx, newProducer(t, n.Addr()))
	require.NoError(t, err)
	require.Equal(t, kerr.UnacceptableCredential.Code, rawResp.Results[0].ErrorCode)
	require.Equal(t, "Too few iterations", *rawResp.Results[0].ErrorMessage)
	altered, err = adm.AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: "dave", Mechanism: kadm.ScramSha256}}, nil)
	require.NoError(t, err)
	require.ErrorIs(t, altered["dave"].Err, kerr.ResourceNotFound)

	describeSCRAM := func() kadm.DescribedUserSCRAMs {
		d, err := adm.DescribeUserSCRAMs(ctx)
		require.NoError(t, err)
		return d
	}
	require.Eventually(t, func() bool { return len(describeSCRAM()) == 2 }, e2eTimeout, 20*time.Millisecond)
	scrams := describeSCRAM()
	require.Equal(t, []kadm.CredInfo{{Mechanism: kadm.ScramSha512, Iterations: 8192}}, scrams["alice"].CredInfos)
	require.Equal(t, []kadm.CredInfo{{Mechanism: kadm.ScramSha256, Iterations: 4096}}, scrams["bob"].CredInfos)
	named, err := adm.DescribeUserSCRAMs(ctx, "carol")
	require.NoError(t, err)
	require.ErrorIs(t, named["carol"].Err, kerr.ResourceNotFound)

	// Quotas: alice's producer rate and the default user's request share.
	alice, user := "alice", "user"
	quotaResults, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{
		{Entity: kadm.ClientQuotaEntity{{Type: user, Name: &alice}}, Ops: []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: 1048576}}},
		{Entity: kadm.ClientQuotaEntity{{Type: user}}, Ops: []kadm.AlterClientQuotaOp{{Key: "request_percentage", Value: 25}}},
	})
	require.NoError(t, err)
	for _, r := range quotaResults {
		require.NoError(t, r.Err)
	}
	quotaResults, err = adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{
		{Entity: kadm.ClientQuotaEntity{{Type: user, Name: &alice}}, Ops: []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: 0.5}}},
	})
	require.NoError(t, err)
	require.ErrorIs(t, quotaResults[0].Err, kerr.InvalidRequest, "a fractional byte rate")

	describeQuotas := func() kadm.DescribedClientQuotas {
		d, err := adm.DescribeClientQuotas(ctx, false, []kadm.DescribeClientQuotaComponent{{Type: user, MatchType: kmsg.QuotasMatchTypeAny}})
		require.NoError(t, err)
		return d
	}
	require.Eventually(t, func() bool { return len(describeQuotas()) == 2 }, e2eTimeout, 20*time.Millisecond)
	checkQuotas := func(d kadm.DescribedClientQuotas) {
		require.Len(t, d, 2)
		require.Nil(t, d[0].Entity[0].Name, "the default user sorts first")
		require.Equal(t, kadm.ClientQuotaValues{{Key: "request_percentage", Value: 25}}, d[0].Values)
		require.Equal(t, "alice", *d[1].Entity[0].Name)
		require.Equal(t, kadm.ClientQuotaValues{{Key: "producer_byte_rate", Value: 1048576}}, d[1].Values)
	}
	checkQuotas(describeQuotas())

	// A restart replays the log into the same state.
	shutdown(t, n)
	n = start()
	t.Cleanup(func() { shutdown(t, n) })
	adm = newAdmin(t, n.Addr())
	require.Eventually(t, func() bool { return len(describedACLs()) == 2 }, e2eTimeout, 20*time.Millisecond)
	require.ElementsMatch(t, allACLs[:2], describedACLs())
	require.Len(t, describeSCRAM(), 2)
	checkQuotas(describeQuotas())
}
