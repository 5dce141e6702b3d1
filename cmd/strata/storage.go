package main

import (
	"context"
	crand "crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/strata-log/strata/core/meta"
	"github.com/strata-log/strata/core/sasl"
	"github.com/strata-log/strata/internal/cli"
	"github.com/strata-log/strata/node"
)

func init() {
	registerStreams("storage", "format a data directory with its cluster id and first SCRAM users, like kafka-storage.sh", withoutStdin(storageCommand))
}

var storageCommand = subcommands{
	name: "storage",
	usage: "Usage:\n\n" +
		"  strata storage format --cluster-id ID [--config server.properties] [--add-scram 'SCRAM-SHA-512=[name=alice,password=secret]' ...] [--ignore-formatted]\n\n" +
		"Prepares a node's data directory (log.dirs) before its first start, like kafka-storage.sh format:\n" +
		"meta.properties with the cluster id and node.id, and the first SCRAM users (KIP-900), which the\n" +
		"cluster's first active controller writes to the empty metadata log, so that a cluster whose every\n" +
		"listener needs SASL has its administrator from the start. Format every controller the same way.\n" +
		"Without format, `strata serve` formats a fresh directory itself (without users).\n",
	subs: map[string]func(ctx context.Context, args []string, stdout, stderr io.Writer) int{
		"format": storageFormat,
	},
}.run

func storageFormat(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs, c := cli.NewFlagSet("storage format", "storage format --cluster-id ID [flags]",
		"Formats the data directory of the node --config describes (log.dirs, node.id).", stderr)
	clusterID := fs.String("cluster-id", "", "the cluster `id` ('strata random-uuid' prints one; required)")
	configPath := fs.String("config", "", "the node's server.properties `file` (default: strata serve's defaults)")
	var scrams cli.StringList
	fs.Var(&scrams, "add-scram", "a SCRAM credential, `MECHANISM=[name=N,password=P]` or MECHANISM=[name=N,salt=B64,saltedpassword=B64,iterations=I]\n(repeatable; kafka-storage.sh's syntax)")
	ignoreFormatted := fs.Bool("ignore-formatted", false, "succeed without change when the directory is already formatted")
	if code, ok := c.ParseFlags(fs, args); !ok {
		return code
	}
	if *clusterID == "" {
		return c.UsageError("--cluster-id is required ('strata random-uuid' prints one)")
	}
	if err := node.CheckClusterID(*clusterID); err != nil {
		return c.UsageError("--cluster-id: %v", err)
	}
	cfg := node.DefaultConfig()
	if *configPath != "" {
		ignored, err := node.LoadConfigFile(&cfg, *configPath)
		if err != nil {
			return c.Fail("%v", err)
		}
		for _, key := range ignored {
			fmt.Fprintf(stderr, "strata storage format: ignoring config key this version does not support: %s\n", key)
		}
	}
	var records []meta.Record
	seen := map[string]bool{}
	for _, s := range scrams {
		r, err := parseAddScram(s, crand.Reader)
		if err != nil {
			return c.UsageError("--add-scram: %v", err)
		}
		key := string(r.Mechanism.SASL()) + "/" + r.Name
		if seen[key] {
			return c.UsageError("--add-scram: %s has two %s credentials", r.Name, r.Mechanism.SASL())
		}
		seen[key] = true
		records = append(records, r)
	}
	dir, err := node.Format(cfg, *clusterID, records)
	switch {
	case errors.Is(err, node.ErrFormatted) && *ignoreFormatted:
		fmt.Fprintf(stdout, "%s is already formatted.\n", dir)
		return exitOK
	case err != nil:
		return c.Fail("%v", err)
	}
	fmt.Fprintf(stdout, "Formatted %s for cluster %s, node %d, with %d SCRAM credentials.\n", dir, *clusterID, cfg.NodeID, len(records))
	return exitOK
}

// parseAddScram reads one --add-scram value, kafka-storage.sh's
// MECHANISM=[key=value,...] with the keys name, password, salt,
// saltedpassword and iterations (salt and saltedpassword in base64;
// values may be double-quoted), into the record the controller would
// write for it. A password is salted here, with a salt from random
// unless one is given, and never stored.
func parseAddScram(s string, random io.Reader) (*meta.UserScramCredentialRecord, error) {
	mechName, body, ok := strings.Cut(s, "=")
	if !ok || !strings.HasPrefix(body, "[") || !strings.HasSuffix(body, "]") {
		return nil, fmt.Errorf("%q: want MECHANISM=[name=...,password=...]", s)
	}
	m, ok := sasl.ParseMechanism(mechName)
	rm, scram := meta.ScramMechanismOf(m)
	if !ok || !scram {
		return nil, fmt.Errorf("%q: unknown SCRAM mechanism %q (SCRAM-SHA-256 or SCRAM-SHA-512)", s, mechName)
	}
	opts := map[string]string{}
	for _, kv := range splitOutsideQuotes(body[1 : len(body)-1]) {
		k, v, ok := strings.Cut(kv, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("%s: %q is not key=value", mechName, kv)
		}
		switch k {
		case "name", "password", "salt", "saltedpassword", "iterations":
		default:
			return nil, fmt.Errorf("%s: unknown key %q (name, password, salt, saltedpassword, iterations)", mechName, k)
		}
		if _, dup := opts[k]; dup {
			return nil, fmt.Errorf("%s: %s given twice", mechName, k)
		}
		if len(v) >= 2 && strings.HasPrefix(v, `"`) && strings.HasSuffix(v, `"`) {
			v = v[1 : len(v)-1]
		}
		opts[k] = v
	}
	name := opts["name"]
	if name == "" {
		return nil, fmt.Errorf("%s: name is required", mechName)
	}
	iterations := defaultScramIterations
	if v, ok := opts["iterations"]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < sasl.MinIterations || n > sasl.MaxIterations {
			return nil, fmt.Errorf("%s: iterations=%s must be %d to %d", mechName, v, sasl.MinIterations, sasl.MaxIterations)
		}
		iterations = n
	}
	var salt []byte
	if v, ok := opts["salt"]; ok {
		var err error
		if salt, err = base64.StdEncoding.DecodeString(v); err != nil || len(salt) == 0 {
			return nil, fmt.Errorf("%s: salt must be base64", mechName)
		}
	}
	password, hasPassword := opts["password"]
	saltedB64, hasSalted := opts["saltedpassword"]
	var salted []byte
	switch {
	case hasPassword && hasSalted:
		return nil, fmt.Errorf("%s: give password or saltedpassword, not both", mechName)
	case hasPassword && password == "":
		return nil, fmt.Errorf("%s: the password is empty", mechName)
	case hasPassword:
		if salt == nil {
			salt = make([]byte, sasl.DefaultSaltBytes)
			if _, err := io.ReadFull(random, salt); err != nil {
				return nil, fmt.Errorf("salt: %w", err)
			}
		}
		var err error
		if salted, err = sasl.SaltedPassword(m, password, salt, iterations); err != nil {
			return nil, fmt.Errorf("%s: %v", mechName, err)
		}
	case hasSalted:
		if salt == nil {
			return nil, fmt.Errorf("%s: saltedpassword needs its salt", mechName)
		}
		var err error
		if salted, err = base64.StdEncoding.DecodeString(saltedB64); err != nil {
			return nil, fmt.Errorf("%s: saltedpassword must be base64", mechName)
		}
	default:
		return nil, fmt.Errorf("%s: give password (or salt and saltedpassword)", mechName)
	}
	cred, err := sasl.DeriveScramCredential(m, salt, iterations, salted)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", mechName, err)
	}
	return &meta.UserScramCredentialRecord{Name: name, Mechanism: rm, Salt: cred.Salt, StoredKey: cred.StoredKey,
		ServerKey: cred.ServerKey, Iterations: int32(cred.Iterations)}, nil
}

// splitOutsideQuotes splits s at the commas outside double quotes, so a
// quoted password may hold commas.
func splitOutsideQuotes(s string) []string {
	var parts []string
	quoted, start := false, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '"':
			quoted = !quoted
		case ',':
			if !quoted {
				parts = append(parts, s[start:i])
				start = i + 1
			}
		}
	}
	return append(parts, s[start:])
}
