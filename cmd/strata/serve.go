package main

import (
	"context"
	crand "crypto/rand"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"syscall"

	"github.com/strata-log/strata/internal/cli"
	"github.com/strata-log/strata/node"
)

func init() {
	register("random-uuid", "print a new cluster id for --cluster-id (like kafka-storage.sh random-uuid)", func([]string) int {
		id, err := node.NewClusterID(crand.Reader)
		if err != nil {
			fmt.Fprintln(os.Stderr, "strata random-uuid:", err)
			return exitError
		}
		fmt.Println(id)
		return exitOK
	})
	register("serve", "run a Strata node (by default one combined broker+controller on 127.0.0.1:9092, data under ./data)", serve)
}

// keyFlags makes every server.properties key a flag of the same name,
// from the rows (node.ConfigKeys: core/server's broker keys and node's),
// applied after --config. They are registered without defaults so that
// only flags actually given override; the usual ones are listed first,
// with usage of their own.
func keyFlags(fs *flag.FlagSet) {
	usual := map[string]string{
		node.KeyProcessRoles:     "`roles`: broker, controller or broker,controller (default " + node.DefaultProcessRoles + ")",
		node.KeyListeners:        "listeners: PLAINTEXT://host:port for a broker, CONTROLLER://host:port for a controller (default " + node.DefaultListeners + ")",
		node.KeyLogDirs:          "data `directory` (default " + node.DefaultLogDir + ")",
		node.KeyNodeID:           "node `id` (default 1)",
		node.KeyControllerVoters: "metadata quorum voters, id@host:port,... (default <node.id>@" + node.DefaultControllerAddr + ")",
	}
	for _, k := range node.ConfigKeys() {
		usage, ok := usual[k.Name]
		if !ok {
			usage = k.Doc
			if k.Default != "" {
				usage += " (default " + k.Default + ")"
			}
		}
		fs.String(k.Name, "", usage)
	}
}

// serve runs a node until SIGINT or SIGTERM. Configuration is applied in
// order: defaults (127.0.0.1:9092, data under ./data), then --config, then
// the flags, which use Kafka's key names.
func serve(args []string) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	help := false
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: strata serve [--config server.properties] [--<server.properties key> value ...]\n\n"+
			"With no arguments, runs a single combined broker and controller on %s with data under %s.\n"+
			"Every server.properties key (docs/operations.md) is also a flag, applied after --config.\n", node.DefaultListeners, node.DefaultLogDir)
		if !help {
			// After a bad flag the error line stays on screen; -h lists
			// every flag.
			fmt.Fprintln(fs.Output(), "Run 'strata serve -h' for every flag.")
			return
		}
		fmt.Fprintln(fs.Output())
		fs.PrintDefaults()
	}
	configPath := fs.String("config", "", "server.properties `file` (Kafka's format and key names)")
	clusterID := fs.String("cluster-id", "", "the cluster `id` a fresh data directory is formatted with (every node of a cluster needs the same one; 'strata random-uuid' prints one); default: a random id for a single node")
	keyFlags(fs)
	help = slices.ContainsFunc(args, func(a string) bool { return a == "-h" || a == "-help" || a == "--help" || a == "--h" })
	if code, ok := cli.Parse(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(fs.Output(), "strata serve: unexpected arguments %q\n", fs.Args())
		return exitUsage
	}

	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	cfg := node.DefaultConfig()
	if *configPath != "" {
		ignored, err := node.LoadConfigFile(&cfg, *configPath)
		if err != nil {
			log.Error("bad configuration", "err", err)
			return exitError
		}
		for _, key := range ignored {
			log.Warn("ignoring config key this version does not support", "key", key, "file", *configPath)
		}
	}
	var flagErr error
	fs.Visit(func(f *flag.Flag) { // only flags given on the command line
		if f.Name == "config" || f.Name == "cluster-id" || flagErr != nil {
			return
		}
		if _, err := cfg.Set(f.Name, f.Value.String()); err != nil {
			flagErr = fmt.Errorf("--%s: %w", f.Name, err)
		}
	})
	if flagErr != nil {
		log.Error("bad configuration", "err", flagErr)
		return exitUsage
	}
	cfg.ClusterID = *clusterID

	// Signals are caught from before the node starts: once it logs that
	// it started and serves, a SIGTERM must shut it down cleanly, not kill
	// it (TestServeProcess sent one in the moment between the two). One
	// that arrives during the start waits in the channel.
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM, syscall.SIGUSR1)
	n, err := node.Start(cfg, log)
	if err != nil {
		signal.Stop(signals)
		log.Error("node failed", "err", err)
		return exitError
	}
	for s := range signals {
		if s == syscall.SIGUSR1 {
			// Counters for benchmarks (strata bench reads the group
			// commit size from them) until the node exports metrics.
			st := n.DiskStats()
			log.Info("disk stats", "fdatasyncs", st.FileSyncs, "dir_fsyncs", st.DirSyncs, "bytes_written", st.BytesWritten)
			continue
		}
		log.Info("signal received; shutting down (send it again to exit at once)", "signal", s.String())
		break
	}
	// A second signal gets the default action: an operator can always
	// kill a shutdown that hangs.
	signal.Stop(signals)
	ctx, cancel := context.WithTimeout(context.Background(), node.DefaultShutdownTimeout)
	defer cancel()
	if err := n.Shutdown(ctx); err != nil {
		log.Error("node failed", "err", err)
		return exitError
	}
	return exitOK
}
