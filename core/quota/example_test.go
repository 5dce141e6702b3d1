package quota_test

import (
	"fmt"
	"time"

	"github.com/strata-log/strata/core/quota"
)

// A producer with a 1 MiB/s quota sends 5 MiB bursts a second apart.
// Kafka spreads the first bursts over ten one-second windows, so the
// first two pass and the third is throttled for 5 s.
func Example() {
	m, err := quota.NewManager(quota.Config{}) // 11 windows of 1 s
	if err != nil {
		panic(err)
	}
	alice := quota.Entity{User: quota.Named("alice")}
	if err := m.Alter(alice, []quota.Op{{Key: quota.ProducerByteRate, Value: 1 << 20}}, false); err != nil {
		panic(err)
	}
	for i := range 3 {
		now := time.Duration(i) * time.Second // since an epoch the caller chooses
		throttle, _ := m.Record(quota.ProducerByteRate, "alice", "app", 5<<20, now)
		fmt.Printf("at %v: throttle %v\n", now, throttle)
	}
	// Output:
	// at 0s: throttle 0s
	// at 1s: throttle 0s
	// at 2s: throttle 5s
}
