package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/internal/cli"
)

func init() {
	registerStreams("acl", "add, list and remove ACLs, like kafka-acls.sh", withoutStdin(aclCommand))
}

var aclCommand = subcommands{
	name: "acl",
	usage: "Usage:\n\n" +
		"  strata acl add --allow-principal User:alice [--allow-host H] --operation Read --topic orders [--group etl] [flags]\n" +
		"  strata acl list [--principal User:alice] [--topic T | --group G | --cluster | --transactional-id X] [flags]\n" +
		"  strata acl remove [--allow-principal P | --deny-principal P] [--operation O] --topic T [flags]\n\n" +
		"Administers ACLs (CreateAcls, DescribeAcls, DeleteAcls) with kafka-acls.sh's flags and meaning:\n" +
		"every principal, host, operation and resource given combine; --operation defaults to All,\n" +
		"hosts to *, --resource-pattern-type to literal. remove without a principal removes every ACL\n" +
		"of the resources (kafka-acls.sh would ask first). Every subcommand takes --bootstrap-server,\n" +
		"--command-config and --timeout.\n",
	subs: map[string]func(ctx context.Context, args []string, stdout, stderr io.Writer) int{
		"add":    aclAdd,
		"list":   aclList,
		"remove": aclRemove,
	},
}.run

// aclFlags are kafka-acls.sh's resource, principal, host, operation and
// pattern flags.
type aclFlags struct {
	topics, groups, txnIDs           cli.StringList
	cluster                          *bool
	allow, deny, allowHost, denyHost cli.StringList
	principal                        cli.StringList
	operations                       cli.StringList
	pattern                          *string
	// producer, consumer and idempotent are kafka-acls.sh's convenience
	// flags (add and remove only).
	producer, consumer, idempotent *bool
}

// register adds the flags to fs; list adds --principal.
func (f *aclFlags) register(fs *flag.FlagSet, list bool) {
	fs.Var(&f.topics, "topic", "a topic `name` (repeatable; * is every topic)")
	fs.Var(&f.groups, "group", "a consumer group `id` (repeatable; * is every group)")
	fs.Var(&f.txnIDs, "transactional-id", "a transactional `id` (repeatable; * is every one)")
	f.cluster = fs.Bool("cluster", false, "the cluster resource")
	if list {
		fs.Var(&f.principal, "principal", "only ACLs of this `principal`, e.g. User:alice (repeatable)")
		f.pattern = fs.String("resource-pattern-type", "", "`type` of the resource patterns listed: literal, prefixed, any or match\n(default: literal with a resource, any without)")
		return
	}
	fs.Var(&f.allow, "allow-principal", "an ALLOW ACL's `principal`, e.g. User:alice (repeatable)")
	fs.Var(&f.deny, "deny-principal", "a DENY ACL's `principal` (repeatable)")
	fs.Var(&f.allowHost, "allow-host", "a `host` (IP) the ALLOW ACLs apply to (repeatable; default *)")
	fs.Var(&f.denyHost, "deny-host", "a `host` (IP) the DENY ACLs apply to (repeatable; default *)")
	fs.Var(&f.operations, "operation", "an `operation`: Read, Write, Create, Delete, Alter, Describe, ClusterAction,\nDescribeConfigs, AlterConfigs, IdempotentWrite or All (repeatable; default All)")
	f.pattern = fs.String("resource-pattern-type", "", "the resource pattern `type`: literal or prefixed (remove: also any or match) (default literal)")
	f.producer = fs.Bool("producer", false, "the producer's ACLs: Write, Describe and Create on --topic (Write and Describe on --transactional-id)")
	f.consumer = fs.Bool("consumer", false, "the consumer's ACLs: Read and Describe on --topic, Read on --group")
	f.idempotent = fs.Bool("idempotent", false, "with --producer, IdempotentWrite on the cluster")
}

// aclGrant is a set of resources with the operations they get.
type aclGrant struct {
	topics, groups, txnIDs []string
	cluster                bool
	ops                    []kadm.ACLOperation
}

// grants are the resources and operations the flags name: every
// resource with --operation's, or what --producer and --consumer mean,
// as kafka-acls.sh's getProducerResourceFilterToAcls and
// getConsumerResourceFilterToAcls build them.
func (f *aclFlags) grants() ([]aclGrant, error) {
	if !*f.producer && !*f.consumer {
		if *f.idempotent {
			return nil, errors.New("--idempotent goes with --producer")
		}
		ops, err := aclOperations(f.operations)
		if err != nil {
			return nil, err
		}
		return []aclGrant{{topics: f.topics, groups: f.groups, txnIDs: f.txnIDs, cluster: *f.cluster, ops: ops}}, nil
	}
	switch {
	case len(f.operations) > 0:
		return nil, errors.New("--operation cannot go with --producer or --consumer, which choose the operations")
	case *f.cluster:
		return nil, errors.New("--cluster cannot go with --producer or --consumer")
	case len(f.topics) == 0:
		return nil, errors.New("--producer and --consumer need --topic")
	case *f.consumer && len(f.groups) == 0:
		return nil, errors.New("--consumer needs --group")
	case !*f.consumer && len(f.groups) > 0:
		return nil, errors.New("--group goes with --consumer")
	case !*f.producer && len(f.txnIDs) > 0:
		return nil, errors.New("--transactional-id goes with --producer")
	}
	var gs []aclGrant
	if *f.producer {
		gs = append(gs, aclGrant{topics: f.topics, ops: []kadm.ACLOperation{kadm.OpWrite, kadm.OpDescribe, kadm.OpCreate}})
		if len(f.txnIDs) > 0 {
			gs = append(gs, aclGrant{txnIDs: f.txnIDs, ops: []kadm.ACLOperation{kadm.OpWrite, kadm.OpDescribe}})
		}
		if *f.idempotent {
			gs = append(gs, aclGrant{cluster: true, ops: []kadm.ACLOperation{kadm.OpIdempotentWrite}})
		}
	}
	if *f.consumer {
		gs = append(gs, aclGrant{topics: f.topics, ops: []kadm.ACLOperation{kadm.OpRead, kadm.OpDescribe}},
			aclGrant{groups: f.groups, ops: []kadm.ACLOperation{kadm.OpRead}})
	}
	return gs, nil
}

// builders are the grants as kadm builders for the flags' principals
// and hosts.
func (f *aclFlags) builders(gs []aclGrant, pattern kadm.ACLPattern) []*kadm.ACLBuilder {
	var bs []*kadm.ACLBuilder
	for _, g := range gs {
		bs = append(bs, kadm.NewACLs().MaybeTopics(g.topics...).MaybeGroups(g.groups...).MaybeTransactionalIDs(g.txnIDs...).
			MaybeClusters(g.cluster).Operations(g.ops...).ResourcePatternType(pattern).
			MaybeAllow(f.allow...).MaybeAllowHosts(orStar(f.allow, f.allowHost)...).
			MaybeDeny(f.deny...).MaybeDenyHosts(orStar(f.deny, f.denyHost)...))
	}
	return bs
}

// hasResource reports whether a resource flag was given.
func (f *aclFlags) hasResource() bool {
	return len(f.topics)+len(f.groups)+len(f.txnIDs) > 0 || *f.cluster
}

// aclOperations parses --operation; none is All.
func aclOperations(names []string) ([]kadm.ACLOperation, error) {
	if len(names) == 0 {
		return []kadm.ACLOperation{kadm.OpAll}, nil
	}
	var ops []kadm.ACLOperation
	for _, name := range names {
		op, err := kmsg.ParseACLOperation(name)
		if err != nil || op == kadm.OpAny || op == kadm.OpUnknown {
			return nil, fmt.Errorf("unknown --operation %q: want Read, Write, Create, Delete, Alter, Describe, ClusterAction, "+
				"DescribeConfigs, AlterConfigs, IdempotentWrite, CreateTokens, DescribeTokens or All", name)
		}
		if !slices.Contains(ops, op) {
			ops = append(ops, op)
		}
	}
	return ops, nil
}

// aclPattern parses --resource-pattern-type; filters also take any and
// match.
func aclPattern(name string, filter bool, def kadm.ACLPattern) (kadm.ACLPattern, error) {
	if name == "" {
		return def, nil
	}
	p, err := kmsg.ParseACLResourcePatternType(name)
	switch {
	case err == nil && (p == kadm.ACLPatternLiteral || p == kadm.ACLPatternPrefixed):
		return p, nil
	case err == nil && filter && (p == kadm.ACLPatternAny || p == kadm.ACLPatternMatch):
		return p, nil
	case filter:
		return 0, fmt.Errorf("--resource-pattern-type %q: want literal, prefixed, any or match", name)
	}
	return 0, fmt.Errorf("--resource-pattern-type %q: want literal or prefixed", name)
}

// checkPrincipals checks that each principal is TYPE:NAME, as Kafka's
// SecurityUtils.parseKafkaPrincipal requires.
func checkPrincipals(lists ...cli.StringList) error {
	for _, l := range lists {
		for _, p := range l {
			if typ, name, ok := strings.Cut(p, ":"); !ok || typ == "" || name == "" {
				return fmt.Errorf("principal %q: want TYPE:NAME, such as User:alice", p)
			}
		}
	}
	return nil
}

// resources sets b's resources from the flags.
func (f *aclFlags) resources(b *kadm.ACLBuilder) *kadm.ACLBuilder {
	b.MaybeTopics(f.topics...).MaybeGroups(f.groups...).MaybeTransactionalIDs(f.txnIDs...).MaybeClusters(*f.cluster)
	return b
}

func aclAdd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs, af := newAdminFlagSet("acl add", "acl add --allow-principal P|--deny-principal P [--operation O ...] RESOURCE [flags]",
		"Adds an ACL for every principal, host, operation and resource given (CreateAcls).", stderr)
	var f aclFlags
	f.register(fs, false)
	if code, ok := af.ParseFlags(fs, args); !ok {
		return code
	}
	grants, opErr := f.grants()
	pattern, patErr := aclPattern(*f.pattern, false, kadm.ACLPatternLiteral)
	switch {
	case opErr != nil:
		return af.UsageError("%v", opErr)
	case patErr != nil:
		return af.UsageError("%v", patErr)
	case len(f.allow)+len(f.deny) == 0:
		return af.UsageError("give --allow-principal or --deny-principal")
	case !f.hasResource():
		return af.UsageError("give a resource: --topic, --group, --transactional-id or --cluster")
	case len(f.allowHost) > 0 && len(f.allow) == 0:
		return af.UsageError("--allow-host needs --allow-principal")
	case len(f.denyHost) > 0 && len(f.deny) == 0:
		return af.UsageError("--deny-host needs --deny-principal")
	}
	if err := checkPrincipals(f.allow, f.deny); err != nil {
		return af.UsageError("%v", err)
	}
	builders := f.builders(grants, pattern)
	return af.run(ctx, func(ctx context.Context, adm *kadm.Client) int {
		var results kadm.CreateACLsResults
		for _, b := range builders {
			rs, err := adm.CreateACLs(ctx, b)
			if err != nil {
				return af.Fail("%s", cli.KafkaError(err, ""))
			}
			results = append(results, rs...)
		}
		code := exitOK
		for _, r := range results {
			acl := aclRow(r.Principal, r.Host, r.Operation, r.Permission, r.Type, r.Name, r.Pattern)
			if r.Err != nil {
				code = af.Fail("%s: %s", acl, cli.KafkaError(r.Err, r.ErrMessage))
				continue
			}
			fmt.Fprintf(stdout, "Added %s\n", acl)
		}
		return code
	})
}

// orStar is hosts, or * when principals are given without hosts.
func orStar(principals, hosts []string) []string {
	if len(principals) > 0 && len(hosts) == 0 {
		return []string{"*"}
	}
	return hosts
}

// aclRow is one ACL as the commands print it.
func aclRow(principal, host string, op kadm.ACLOperation, perm kmsg.ACLPermissionType, typ kmsg.ACLResourceType, name string, pattern kadm.ACLPattern) string {
	return fmt.Sprintf("%s %s %s on %s:%s:%s from %s", principal, strings.ToUpper(perm.String()), op, typ, pattern, name, host)
}

func aclList(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs, af := newAdminFlagSet("acl list", "acl list [--principal P] [RESOURCE ...] [flags]",
		"Lists the ACLs (DescribeAcls): every one, or those of the resources and principals given.", stderr)
	var f aclFlags
	f.register(fs, true)
	if code, ok := af.ParseFlags(fs, args); !ok {
		return code
	}
	def := kadm.ACLPatternAny
	if f.hasResource() {
		def = kadm.ACLPatternLiteral
	}
	pattern, err := aclPattern(*f.pattern, true, def)
	if err != nil {
		return af.UsageError("%v", err)
	}
	if err := checkPrincipals(f.principal); err != nil {
		return af.UsageError("%v", err)
	}
	b := kadm.NewACLs().Operations().ResourcePatternType(pattern)
	if f.hasResource() {
		f.resources(b)
	} else {
		b.AnyResource()
	}
	b.Allow(f.principal...).AllowHosts().Deny(f.principal...).DenyHosts()
	return af.run(ctx, func(ctx context.Context, adm *kadm.Client) int {
		results, err := adm.DescribeACLs(ctx, b)
		if err != nil {
			return af.Fail("%s", cli.KafkaError(err, ""))
		}
		var rows []kadm.DescribedACL
		for _, r := range results {
			if r.Err != nil {
				return af.Fail("%s", cli.KafkaError(r.Err, r.ErrMessage))
			}
			rows = append(rows, r.Described...)
		}
		printACLs(stdout, rows)
		return exitOK
	})
}

// printACLs prints ACLs as a table, sorted and without duplicates (one
// binding matches several filters when principals are given).
func printACLs(w io.Writer, acls []kadm.DescribedACL) {
	slices.SortFunc(acls, func(a, b kadm.DescribedACL) int {
		return cmp.Or(cmp.Compare(a.Type, b.Type), cmp.Compare(a.Name, b.Name), cmp.Compare(a.Pattern, b.Pattern),
			cmp.Compare(a.Principal, b.Principal), cmp.Compare(a.Host, b.Host),
			cmp.Compare(a.Operation, b.Operation), cmp.Compare(a.Permission, b.Permission))
	})
	acls = slices.Compact(acls)
	tw := cli.NewTable(w, "RESOURCE-TYPE\tNAME\tPATTERN\tPRINCIPAL\tHOST\tOPERATION\tPERMISSION")
	for _, a := range acls {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", strings.ToUpper(a.Type.String()), a.Name, strings.ToUpper(a.Pattern.String()),
			a.Principal, a.Host, strings.ToUpper(a.Operation.String()), strings.ToUpper(a.Permission.String()))
	}
	_ = tw.Flush()
}

func aclRemove(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs, af := newAdminFlagSet("acl remove", "acl remove [--allow-principal P|--deny-principal P] [--operation O ...] RESOURCE [flags]",
		"Removes the ACLs of the resources that match the principals, hosts and operations given (DeleteAcls);\n"+
			"without a principal, every ACL of the resources.", stderr)
	var f aclFlags
	f.register(fs, false)
	if code, ok := af.ParseFlags(fs, args); !ok {
		return code
	}
	pattern, err := aclPattern(*f.pattern, true, kadm.ACLPatternLiteral)
	switch {
	case err != nil:
		return af.UsageError("%v", err)
	case !f.hasResource():
		return af.UsageError("give a resource: --topic, --group, --transactional-id or --cluster")
	case len(f.allowHost) > 0 && len(f.allow) == 0:
		return af.UsageError("--allow-host needs --allow-principal")
	case len(f.denyHost) > 0 && len(f.deny) == 0:
		return af.UsageError("--deny-host needs --deny-principal")
	}
	if err := checkPrincipals(f.allow, f.deny); err != nil {
		return af.UsageError("%v", err)
	}
	var builders []*kadm.ACLBuilder
	if len(f.allow)+len(f.deny) == 0 {
		if len(f.operations) > 0 || *f.producer || *f.consumer {
			return af.UsageError("--operation, --producer and --consumer need --allow-principal or --deny-principal (without a principal every ACL of the resources goes)")
		}
		builders = append(builders, f.resources(kadm.NewACLs()).ResourcePatternType(pattern).
			Operations().Allow().AllowHosts().Deny().DenyHosts())
	} else {
		grants, err := f.grants()
		if err != nil {
			return af.UsageError("%v", err)
		}
		builders = f.builders(grants, pattern)
	}
	return af.run(ctx, func(ctx context.Context, adm *kadm.Client) int {
		var results kadm.DeleteACLsResults
		for _, b := range builders {
			rs, err := adm.DeleteACLs(ctx, b)
			if err != nil {
				return af.Fail("%s", cli.KafkaError(err, ""))
			}
			results = append(results, rs...)
		}
		var removed []kadm.DescribedACL
		var failed error
		for _, r := range results {
			if r.Err != nil {
				failed = cmp.Or(failed, errors.New(cli.KafkaError(r.Err, r.ErrMessage)))
				continue
			}
			for _, d := range r.Deleted {
				if d.Err != nil {
					failed = cmp.Or(failed, errors.New(cli.KafkaError(d.Err, d.ErrMessage)))
					continue
				}
				removed = append(removed, kadm.DescribedACL{Principal: d.Principal, Host: d.Host, Type: d.Type, Name: d.Name,
					Pattern: d.Pattern, Operation: d.Operation, Permission: d.Permission})
			}
		}
		fmt.Fprintf(stdout, "Removed %d ACLs:\n", len(removed))
		printACLs(stdout, removed)
		if failed != nil {
			return af.Fail("%v", failed)
		}
		return exitOK
	})
}
