//go:build ignore

// kgo-scram-user creates a SCRAM-SHA-256 and a SCRAM-SHA-512 credential
// for a user through AlterUserScramCredentials (KIP-554) on a listener
// whose principal may alter them, for .ci/kgo-suite's SCRAM tests:
//
//	go run .ci/kgo-scram-user.go HOST:PORT USER PASSWORD
//
// It retries until the credentials are stored or 20 s have passed.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: go run .ci/kgo-scram-user.go HOST:PORT USER PASSWORD")
		os.Exit(2)
	}
	addr, user, password := os.Args[1], os.Args[2], os.Args[3]
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// One mechanism a request: Kafka refuses a user altered twice in one
	// request (DUPLICATE_RESOURCE).
	for _, m := range []kadm.ScramMechanism{kadm.ScramSha256, kadm.ScramSha512} {
		for {
			// Fresh each time: kadm fills in the salt it draws.
			upsert := kadm.UpsertSCRAM{User: user, Mechanism: m, Iterations: 4096, Password: password}
			res, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{upsert})
			if err == nil {
				err = res.Error()
			}
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				fmt.Fprintf(os.Stderr, "creating %s credentials for %s: %v\n", m, user, err)
				os.Exit(1)
			}
			fmt.Fprintf(os.Stderr, "retrying: %v\n", err)
			time.Sleep(200 * time.Millisecond)
		}
	}
}
