package interop

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestKgoGroupTransactSessionChurn: the shape of franz-go's own
// TestTxnEtl (issue 22, finding 10). Consume-transform-produce members,
// each a kgo GroupTransactSession with its own transactional id, share a
// consumer group while members join and leave, so that partitions move
// between producers mid-transaction (a revoked member aborts, the next
// owner starts from the committed offsets). Each transaction takes up
// to a few hundred records and writes them, keyed, over many partitions:
// kgo keeps several produce requests in flight per broker, each with
// batches of several partitions, and a partition joins the transaction
// while the transaction's other partitions are already written. Every
// transactional produce and every End must succeed (kgo's producer id
// fails for good on OUT_OF_ORDER_SEQUENCE_NUMBER, which a broker that
// let one request's batch overtake an earlier one's answered), and
// read_committed, the output holds each input record exactly once.
// Classic cooperative-sticky members at transaction.version 1, KIP-848
// consumer-protocol members at 2.
func TestKgoGroupTransactSessionChurn(t *testing.T) {
	forEachTxnVersion(t, testKgoGroupTransactSessionChurn)
}

func testKgoGroupTransactSessionChurn(t *testing.T, n *testNode) {
	addr := n.Addr()
	adm := newAdmin(t, addr)
	const (
		src, dst           = "churn-in", "churn-out"
		srcParts, dstParts = 6, 16
		total              = 6000
		pollMax            = 400
		produceBurst       = 20
	)
	createTopic(t, adm, src, srcParts, nil)
	createTopic(t, adm, dst, dstParts, nil)
	prod := newClient(t, []string{addr}, kgo.DefaultProduceTopic(src), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	var recs []*kgo.Record
	for i := 0; i < total; i++ {
		recs = append(recs, &kgo.Record{Key: []byte(strconv.Itoa(i)), Value: []byte(strconv.Itoa(i))})
	}
	require.NoError(t, prod.ProduceSync(ctxFor(t, opTimeout), recs...).FirstErr())
	consumerProtocol := t.Name() == "TestKgoGroupTransactSessionChurn/transaction.version=2"

	ctx := ctxFor(t, 3*opTimeout)
	var (
		mu        sync.Mutex
		done      = map[string]bool{} // input values whose transform committed
		failures  []string
		committed int
	)
	fail := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		failures = append(failures, fmt.Sprintf(format, args...))
	}
	allDone := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(done) == total
	}
	// member runs one member until it has committed txns transactions
	// (-1: until every input record is transformed) and leaves.
	member := func(name string, txns int) {
		opts := append(etlSessionOpts([]string{addr}, "churn-"+name, "churn-group", src, dst),
			kgo.FetchMaxWait(100*time.Millisecond),
			kgo.SessionTimeout(10*time.Second))
		if consumerProtocol {
			opts = append(opts, kgo.ServerSideBalancer())
		}
		sess, err := kgo.NewGroupTransactSession(opts...)
		if err != nil {
			fail("%s: %v", name, err)
			return
		}
		defer sess.Close()
		n := 0
		for ctx.Err() == nil && (txns < 0 || n < txns) && !allDone() {
			pctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
			fetches := sess.PollRecords(pctx, pollMax)
			cancel()
			fetches.EachError(func(topic string, p int32, err error) {
				if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
					fail("%s: fetch %s[%d]: %v", name, topic, p, err)
				}
			})
			var in []*kgo.Record
			fetches.EachRecord(func(r *kgo.Record) { in = append(in, r) })
			if len(in) == 0 {
				continue
			}
			if err := sess.Begin(); err != nil {
				fail("%s: Begin: %v", name, err)
				return
			}
			for i, r := range in {
				if i%produceBurst == produceBurst-1 {
					// The transform takes time: kgo's batches (10 ms
					// linger) go out as they fill, partitions join the
					// transaction as their first records come, and
					// several requests are in flight at once.
					time.Sleep(time.Millisecond)
				}
				sess.Produce(ctx, &kgo.Record{Key: r.Key, Value: r.Value}, func(_ *kgo.Record, err error) {
					if err != nil && !errors.Is(err, kgo.ErrAborting) {
						fail("%s: transactional produce: %v", name, err)
					}
				})
			}
			ok, err := sess.End(ctx, kgo.TryCommit)
			if err != nil {
				fail("%s: End: %v", name, err)
				return
			}
			if !ok {
				continue // revoked or lost mid-transaction: aborted, read again by the next owner
			}
			n++
			mu.Lock()
			committed++
			for _, r := range in {
				if done[string(r.Value)] {
					failures = append(failures, fmt.Sprintf("%s: input %s transformed in two committed transactions", name, r.Value))
				}
				done[string(r.Value)] = true
			}
			mu.Unlock()
		}
	}
	var wg sync.WaitGroup
	start := func(name string, txns int) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			member(name, txns)
		}()
	}
	// Three members, two of which leave after a few transactions; more
	// join while they run; one leaves at once.
	start("a", -1)
	start("b", 2)
	start("c", 4)
	time.Sleep(time.Second)
	start("d", -1)
	start("e", 0)
	start("f", 3)
	time.Sleep(time.Second)
	start("g", -1)
	wg.Wait()
	mu.Lock()
	require.Empty(t, failures)
	require.Len(t, done, total, "every input record transformed in a committed transaction")
	t.Logf("%d transactions committed", committed)
	mu.Unlock()

	got := consumeKgo(t, []string{addr}, dst, atStart(dstParts), total, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	seen := map[string]int{}
	for _, r := range got {
		seen[string(r.Value)]++
	}
	for i := 0; i < total; i++ {
		require.Equal(t, 1, seen[strconv.Itoa(i)], "input %d in %s", i, dst)
	}
}
