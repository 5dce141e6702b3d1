package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/internal/cli"
)

func init() {
	registerStreams("quota", "alter and describe client quotas, like kafka-configs.sh --entity-type users|clients|ips", withoutStdin(quotaCommand))
}

var quotaCommand = subcommands{
	name: "quota",
	usage: "Usage:\n\n" +
		"  strata quota alter ENTITY [--add key=value ...] [--delete key ...]\n" +
		"  strata quota describe [ENTITY]\n\n" +
		"Administers client quotas (AlterClientQuotas, DescribeClientQuotas), like kafka-configs.sh\n" +
		"--entity-type users|clients|ips. ENTITY is --user NAME or --user-default, with or without\n" +
		"--client-id ID or --client-id-default, or --ip ADDR or --ip-default (the <default> entities\n" +
		"apply to users, clients or IPs without quotas of their own). Keys: producer_byte_rate,\n" +
		"consumer_byte_rate, request_percentage, controller_mutation_rate, connection_creation_rate (ips).\n" +
		"Every subcommand takes --bootstrap-server, --command-config and --timeout.\n",
	subs: map[string]func(ctx context.Context, args []string, stdout, stderr io.Writer) int{
		"alter":    quotaAlter,
		"describe": quotaDescribe,
	},
}.run

// quotaEntityFlags name a quota entity as kafka-configs.sh's
// --entity-type/--entity-name/--entity-default do.
type quotaEntityFlags struct {
	user, clientID, ip                      *string
	userDefault, clientIDDefault, ipDefault *bool
}

func (f *quotaEntityFlags) register(fs *flag.FlagSet) {
	f.user = fs.String("user", "", "the user principal `name` (kafka-configs.sh --entity-type users --entity-name)")
	f.userDefault = fs.Bool("user-default", false, "the <default> user")
	f.clientID = fs.String("client-id", "", "the client `id` (--entity-type clients)")
	f.clientIDDefault = fs.Bool("client-id-default", false, "the <default> client id")
	f.ip = fs.String("ip", "", "the client `address` (--entity-type ips)")
	f.ipDefault = fs.Bool("ip-default", false, "the <default> IP")
}

// component is one entity type's component from a name flag and a
// default flag; given is false when neither was set.
func component(typ string, name string, isDefault bool) (c kadm.ClientQuotaEntityComponent, given bool, err error) {
	switch {
	case name != "" && isDefault:
		return c, false, fmt.Errorf("give a %s or its default, not both", typ)
	case isDefault:
		return kadm.ClientQuotaEntityComponent{Type: typ}, true, nil
	case name != "":
		return kadm.ClientQuotaEntityComponent{Type: typ, Name: &name}, true, nil
	}
	return c, false, nil
}

// entity is the entity the flags name, in Kafka's order (user, then
// client-id); an IP cannot be combined with the others.
func (f *quotaEntityFlags) entity() (kadm.ClientQuotaEntity, error) {
	var e kadm.ClientQuotaEntity
	for _, c := range []struct {
		typ       string
		name      string
		isDefault bool
	}{{"user", *f.user, *f.userDefault}, {"client-id", *f.clientID, *f.clientIDDefault}, {"ip", *f.ip, *f.ipDefault}} {
		comp, given, err := component(c.typ, c.name, c.isDefault)
		if err != nil {
			return nil, err
		}
		if given {
			e = append(e, comp)
		}
	}
	if len(e) > 1 && slices.ContainsFunc(e, func(c kadm.ClientQuotaEntityComponent) bool { return c.Type == "ip" }) {
		return nil, fmt.Errorf("an IP quota entity cannot be combined with a user or client id")
	}
	return e, nil
}

func quotaAlter(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs, af := newAdminFlagSet("quota alter", "quota alter ENTITY [--add key=value ...] [--delete key ...] [flags]",
		"Sets and removes quotas of one entity (AlterClientQuotas).", stderr)
	var f quotaEntityFlags
	f.register(fs)
	var adds cli.KeyValues
	fs.Var(&adds, "add", "set a quota, `key=value` (repeatable), e.g. producer_byte_rate=1048576")
	var deletes cli.StringList
	fs.Var(&deletes, "delete", "remove a quota `key` (repeatable)")
	if code, ok := af.ParseFlags(fs, args); !ok {
		return code
	}
	entity, err := f.entity()
	switch {
	case err != nil:
		return af.UsageError("%v", err)
	case len(entity) == 0:
		return af.UsageError("give an entity: --user, --user-default, --client-id, --client-id-default, --ip or --ip-default")
	case len(adds)+len(deletes) == 0:
		return af.UsageError("give --add key=value or --delete key")
	}
	var ops []kadm.AlterClientQuotaOp
	seen := map[string]bool{}
	for _, kv := range adds {
		v, err := strconv.ParseFloat(kv.Value, 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
			return af.UsageError("--add %s=%s: the value must be a positive number", kv.Key, kv.Value)
		}
		ops = append(ops, kadm.AlterClientQuotaOp{Key: kv.Key, Value: v})
		seen[kv.Key] = true
	}
	for _, k := range deletes {
		if seen[k] {
			return af.UsageError("%s is both added and deleted", k)
		}
		ops = append(ops, kadm.AlterClientQuotaOp{Key: k, Remove: true})
	}
	return af.run(ctx, func(ctx context.Context, adm *kadm.Client) int {
		results, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{Entity: entity, Ops: ops}})
		if err != nil {
			return af.Fail("%s", cli.KafkaError(err, ""))
		}
		code := exitOK
		for _, r := range results {
			if r.Err != nil {
				code = af.Fail("%s: %s", entityString(r.Entity), cli.KafkaError(r.Err, r.ErrMessage))
				continue
			}
			fmt.Fprintf(stdout, "Altered the quotas of %s.\n", entityString(r.Entity))
		}
		return code
	})
}

// entityString is an entity as kafka-configs.sh names it:
// user=alice,client-id=<default>.
func entityString(e kadm.ClientQuotaEntity) string {
	rank := map[string]int{"user": 0, "client-id": 1, "ip": 2}
	e = slices.Clone(e)
	slices.SortFunc(e, func(a, b kadm.ClientQuotaEntityComponent) int { return cmp.Compare(rank[a.Type], rank[b.Type]) })
	parts := make([]string, len(e))
	for i, c := range e {
		name := "<default>"
		if c.Name != nil {
			name = *c.Name
		}
		parts[i] = c.Type + "=" + name
	}
	return strings.Join(parts, ",")
}

func quotaDescribe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs, af := newAdminFlagSet("quota describe", "quota describe [ENTITY] [flags]",
		"Prints quotas (DescribeClientQuotas): every entity's, or, with entity flags, those of exactly that entity.", stderr)
	var f quotaEntityFlags
	f.register(fs)
	if code, ok := af.ParseFlags(fs, args); !ok {
		return code
	}
	entity, err := f.entity()
	if err != nil {
		return af.UsageError("%v", err)
	}
	var filter []kadm.DescribeClientQuotaComponent
	for _, c := range entity {
		match := kadm.DescribeClientQuotaComponent{Type: c.Type, MatchName: c.Name, MatchType: kmsg.QuotasMatchTypeExact}
		if c.Name == nil {
			match.MatchType = kmsg.QuotasMatchTypeDefault
		}
		filter = append(filter, match)
	}
	return af.run(ctx, func(ctx context.Context, adm *kadm.Client) int {
		quotas, err := adm.DescribeClientQuotas(ctx, len(filter) > 0, filter)
		if err != nil {
			return af.Fail("%s", cli.KafkaError(err, ""))
		}
		type row struct{ entity, key, value string }
		var rows []row
		for _, q := range quotas {
			for _, v := range q.Values {
				rows = append(rows, row{entityString(q.Entity), v.Key, strconv.FormatFloat(v.Value, 'f', -1, 64)})
			}
		}
		slices.SortFunc(rows, func(a, b row) int { return cmp.Or(cmp.Compare(a.entity, b.entity), cmp.Compare(a.key, b.key)) })
		tw := cli.NewTable(stdout, "ENTITY\tQUOTA\tVALUE")
		for _, r := range rows {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", r.entity, r.key, r.value)
		}
		_ = tw.Flush()
		return exitOK
	})
}
