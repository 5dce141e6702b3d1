package broker

import (
	"time"

	"github.com/strata-log/strata/core/record"
)

// The estimated CPU costs of requests' heavy parts (request.offload), from
// the validation benchmark (core/record BenchmarkValidateProduce: per MiB
// of records, about 0.4 ms uncompressed and 0.5 to 10 ms compressed,
// gzip the slowest) and BenchmarkMetadataAllTopics. They decide what runs
// inline on the loop (below DefaultInlineWorkBelow) and what a job costs
// in the simulator's virtual time. They are estimates: what the node
// really spends is what strata_loop_lag_ms and the request metrics show.
const (
	// uncompressedValidationCostPerKiB: parsing records in place.
	uncompressedValidationCostPerKiB = 500 * time.Nanosecond
	// compressedValidationCostPerByte: per compressed byte, which
	// decompresses to several (four to fourteen for real data).
	compressedValidationCostPerByte = 10 * time.Nanosecond
	// minCompressedValidationCost: a compressed batch may decompress to
	// 16 × max.message.bytes whatever its size (a bomb is refused at the
	// bound, not before), so none is small enough to run inline.
	minCompressedValidationCost = 2 * DefaultInlineWorkBelow
)

// validationCost estimates the CPU time of validating one partition's
// produced records.
func validationCost(payload []byte) time.Duration {
	b, err := record.ReadBatch(payload, len(payload)+1)
	if err != nil {
		return 0 // refused on its header, which costs nothing
	}
	if b.Codec() == record.CodecNone {
		return time.Duration(len(payload)) * uncompressedValidationCostPerKiB / 1024
	}
	return max(minCompressedValidationCost, time.Duration(len(payload))*compressedValidationCostPerByte)
}

// maxIdleValidators bounds the validators the broker keeps between jobs:
// one per job that may run at once is enough, more would only hold
// buffers.
const maxIdleValidators = 8

// releaseValidatorAbove: a validator that last held more than this many
// decompressed bytes drops its buffers before it is kept, so an idle
// broker does not hold the largest batches it saw.
const releaseValidatorAbove = 1 << 20

// takeValidator hands out a validator for one job; the job owns it until
// putValidator.
func (b *Broker) takeValidator() *record.Validator {
	if n := len(b.validators); n > 0 {
		v := b.validators[n-1]
		b.validators[n-1] = nil
		b.validators = b.validators[:n-1]
		return v
	}
	return record.NewValidator()
}

// putValidator takes back a job's validator.
func (b *Broker) putValidator(v *record.Validator, validated []produceAppend) {
	for i := range validated {
		if validated[i].vb.Summary.DecompressedBytes > releaseValidatorAbove {
			v.Release()
			break
		}
	}
	if len(b.validators) < maxIdleValidators {
		b.validators = append(b.validators, v)
	}
}
