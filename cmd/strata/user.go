package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/strata-log/strata/core/sasl"
	"github.com/strata-log/strata/internal/cli"
)

func init() {
	registerStreams("user", "create, list and delete SCRAM users, like kafka-configs.sh --entity-type users", userCommand)
}

// defaultScramIterations is --iterations of `strata user create`: Kafka's
// ScramMechanism default.
const defaultScramIterations = 4096

// userCommand is `strata user create|list|delete`; create reads the
// password from stdin when no --password-file is given.
func userCommand(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return subcommands{
		name: "user",
		usage: "Usage:\n\n" +
			"  strata user create NAME --mechanism SCRAM-SHA-512 [--iterations N] [--password-file F]\n" +
			"  strata user list [NAME ...]\n" +
			"  strata user delete NAME --mechanism SCRAM-SHA-512\n\n" +
			"Administers SCRAM credentials (AlterUserScramCredentials, DescribeUserScramCredentials), like\n" +
			"kafka-configs.sh --entity-type users --add-config 'SCRAM-SHA-512=[password=...]'. The salted\n" +
			"password is computed here; the brokers store only the derived keys. The password is never a\n" +
			"flag's value (shell history and ps would show it): create reads it from --password-file, from\n" +
			"stdin, or from a prompt without echo on a terminal. Every subcommand takes --bootstrap-server,\n" +
			"--command-config and --timeout.\n",
		subs: map[string]func(ctx context.Context, args []string, stdout, stderr io.Writer) int{
			"create": func(ctx context.Context, args []string, stdout, stderr io.Writer) int {
				return userCreate(ctx, args, stdin, stdout, stderr)
			},
			"list":   userList,
			"delete": userDelete,
		},
	}.run(ctx, args, stdout, stderr)
}

// scramMechanisms are the mechanisms of a user command's --mechanism.
var scramMechanisms = map[string]kadm.ScramMechanism{
	"SCRAM-SHA-256": kadm.ScramSha256,
	"SCRAM-SHA-512": kadm.ScramSha512,
}

// parseScramMechanisms checks the --mechanism values: at least one, each
// a SCRAM mechanism, none twice.
func parseScramMechanisms(names []string) ([]kadm.ScramMechanism, error) {
	if len(names) == 0 {
		return nil, fmt.Errorf("--mechanism is required (SCRAM-SHA-256 or SCRAM-SHA-512)")
	}
	var ms []kadm.ScramMechanism
	for _, name := range names {
		m, ok := scramMechanisms[strings.ToUpper(name)]
		switch {
		case !ok:
			return nil, fmt.Errorf("--mechanism %s: want SCRAM-SHA-256 or SCRAM-SHA-512", name)
		case slices.Contains(ms, m):
			return nil, fmt.Errorf("--mechanism %s given twice", name)
		}
		ms = append(ms, m)
	}
	return ms, nil
}

func userCreate(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs, af := newAdminFlagSet("user create", "user create NAME --mechanism M [flags]",
		"Creates a SCRAM credential for NAME, or replaces the one it has for the mechanism. The password is the\n"+
			"first line of --password-file (- is stdin), or of stdin, or typed at a prompt without echo.", stderr)
	var mechanisms cli.StringList
	fs.Var(&mechanisms, "mechanism", "the SCRAM `mechanism`: SCRAM-SHA-256 or SCRAM-SHA-512 (repeatable: one credential each)")
	iterations := fs.Int("iterations", defaultScramIterations, fmt.Sprintf("PBKDF2 `iterations`, %d to %d", sasl.MinIterations, sasl.MaxIterations))
	passwordFile := fs.String("password-file", "", "read the password from the first line of this `file` (- for stdin)")
	names, code, ok := cli.ParseArgs(fs, args)
	if !ok {
		return code
	}
	ms, err := parseScramMechanisms(mechanisms)
	switch {
	case len(names) != 1:
		return af.UsageError("give exactly one user name, got %q", names)
	case err != nil:
		return af.UsageError("%v", err)
	case *iterations < sasl.MinIterations || *iterations > sasl.MaxIterations:
		return af.UsageError("--iterations must be %d to %d, got %d", sasl.MinIterations, sasl.MaxIterations, *iterations)
	}
	password, err := cli.ReadPassword(*passwordFile, stdin, stderr)
	if err != nil {
		return af.UsageError("%v", err)
	}
	upserts := make([]kadm.UpsertSCRAM, len(ms))
	for i, m := range ms {
		upserts[i] = kadm.UpsertSCRAM{User: names[0], Mechanism: m, Iterations: int32(*iterations), Password: password}
	}
	return af.run(ctx, func(ctx context.Context, adm *kadm.Client) int {
		// One user per request: AlterUserScramCredentials answers one
		// result per user, so each mechanism goes alone.
		for _, u := range upserts {
			res, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{u})
			if code := reportUserAlter(af, res, err, u.User, u.Mechanism); code != exitOK {
				return code
			}
			fmt.Fprintf(stdout, "Created %s credential for user %s (%d iterations).\n", u.Mechanism, u.User, u.Iterations)
		}
		return exitOK
	})
}

// reportUserAlter reports a failed AlterUserScramCredentials for user
// and returns its exit code.
func reportUserAlter(af *adminFlags, res kadm.AlteredUserSCRAMs, err error, user string, m kadm.ScramMechanism) int {
	if err != nil {
		return af.Fail("user %s: %s", user, cli.KafkaError(err, ""))
	}
	r, ok := res[user]
	switch {
	case !ok:
		return af.Fail("user %s: no answer", user)
	case r.Err != nil:
		return af.Fail("user %s %s: %s", user, m, cli.KafkaError(r.Err, r.ErrMessage))
	}
	return exitOK
}

func userList(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs, af := newAdminFlagSet("user list", "user list [NAME ...] [flags]",
		"Lists SCRAM users with their mechanisms and iterations (never keys or salts); with names, only those.", stderr)
	names, code, ok := cli.ParseArgs(fs, args)
	if !ok {
		return code
	}
	return af.run(ctx, func(ctx context.Context, adm *kadm.Client) int {
		described, err := adm.DescribeUserSCRAMs(ctx, names...)
		if err != nil {
			return af.Fail("%s", cli.KafkaError(err, ""))
		}
		code := exitOK
		tw := cli.NewTable(stdout, "USER\tMECHANISM\tITERATIONS")
		for _, d := range described.Sorted() {
			if d.Err != nil {
				code = af.Fail("user %s: %s", d.User, cli.KafkaError(d.Err, d.ErrMessage))
				continue
			}
			infos := slices.Clone(d.CredInfos)
			slices.SortFunc(infos, func(a, b kadm.CredInfo) int { return int(a.Mechanism) - int(b.Mechanism) })
			for _, c := range infos {
				fmt.Fprintf(tw, "%s\t%s\t%d\n", d.User, c.Mechanism, c.Iterations)
			}
		}
		_ = tw.Flush()
		return code
	})
}

func userDelete(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs, af := newAdminFlagSet("user delete", "user delete NAME --mechanism M [flags]",
		"Deletes NAME's SCRAM credential for each --mechanism (RESOURCE_NOT_FOUND when it has none).", stderr)
	var mechanisms cli.StringList
	fs.Var(&mechanisms, "mechanism", "the SCRAM `mechanism` whose credential goes: SCRAM-SHA-256 or SCRAM-SHA-512 (repeatable)")
	names, code, ok := cli.ParseArgs(fs, args)
	if !ok {
		return code
	}
	ms, err := parseScramMechanisms(mechanisms)
	switch {
	case len(names) != 1:
		return af.UsageError("give exactly one user name, got %q", names)
	case err != nil:
		return af.UsageError("%v", err)
	}
	return af.run(ctx, func(ctx context.Context, adm *kadm.Client) int {
		for _, m := range ms {
			res, err := adm.AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: names[0], Mechanism: m}}, nil)
			if code := reportUserAlter(af, res, err, names[0], m); code != exitOK {
				return code
			}
			fmt.Fprintf(stdout, "Deleted %s credential of user %s.\n", m, names[0])
		}
		return exitOK
	})
}
