package linearizability

import (
	"errors"
	"fmt"
	"hash/fnv"

	"github.com/anishathalye/porcupine"
)

// ErrKeyExists is the output error of a CreateIfAbsent whose key was already
// present (Kafka's TOPIC_ALREADY_EXISTS).
var ErrKeyExists = errors.New("key already exists")

// ErrKeyNotFound is the output error of a Delete whose key was absent
// (Kafka's UNKNOWN_TOPIC_OR_PARTITION).
var ErrKeyNotFound = errors.New("key not found")

// KVOp names an operation of the key-value model.
type KVOp uint8

const (
	// KVOpPut sets a key to a value unconditionally; it always succeeds.
	KVOpPut KVOp = iota + 1
	// KVOpGet reads a key: its value and whether it is present.
	KVOpGet
	// KVOpDelete removes a key, failing with ErrKeyNotFound if absent.
	KVOpDelete
	// KVOpCreateIfAbsent sets a key only if it is absent, failing with
	// ErrKeyExists otherwise.
	KVOpCreateIfAbsent
)

// String returns the operation's name as DescribeOperation prints it.
func (o KVOp) String() string {
	switch o {
	case KVOpPut:
		return "Put"
	case KVOpGet:
		return "Get"
	case KVOpDelete:
		return "Delete"
	case KVOpCreateIfAbsent:
		return "CreateIfAbsent"
	default:
		return fmt.Sprintf("KVOp(%d)", uint8(o))
	}
}

// KVInput is the input of a key-value operation. Value is used by Put and
// CreateIfAbsent only.
type KVInput struct {
	Op    KVOp
	Key   string
	Value string
}

// KVPut returns the input of a Put of value at key.
func KVPut(key, value string) KVInput {
	return KVInput{Op: KVOpPut, Key: key, Value: value}
}

// KVGet returns the input of a Get of key.
func KVGet(key string) KVInput {
	return KVInput{Op: KVOpGet, Key: key}
}

// KVDelete returns the input of a Delete of key.
func KVDelete(key string) KVInput {
	return KVInput{Op: KVOpDelete, Key: key}
}

// KVCreateIfAbsent returns the input of a CreateIfAbsent of value at key.
func KVCreateIfAbsent(key, value string) KVInput {
	return KVInput{Op: KVOpCreateIfAbsent, Key: key, Value: value}
}

// KVOutput is the observed output of a key-value operation.
//
//   - Put: the zero value.
//   - Get: Found and, when Found, Value.
//   - Delete: Err is nil if the key was removed, ErrKeyNotFound if absent.
//   - CreateIfAbsent: Err is nil if the key was created, ErrKeyExists if it
//     was already present.
//
// Any other error is not a KV outcome: record the operation with
// History.Fail if it may have taken effect, or History.Discard if it
// certainly did not. An operation recorded that way has an [Unknown] output
// instead of a KVOutput.
type KVOutput struct {
	Value string
	Found bool
	Err   error
}

// kvState is the model's state for one key (the model is partitioned by
// key). It is comparable, so porcupine's default == is its equality.
type kvState struct {
	present bool
	value   string
}

// KVModel returns the porcupine model of a map from string keys to string
// values, partitioned by key. Inputs are [KVInput]; outputs are [KVOutput]
// or [Unknown].
func KVModel() porcupine.Model {
	return porcupine.Model{
		Partition:         partitionByKey,
		Init:              func() any { return kvState{} },
		Step:              kvStep,
		Hash:              kvHash,
		DescribeOperation: describeKVOperation,
		DescribeState:     describeKVState,
	}
}

// partitionByKey splits a history into one sub-history per key, in order of
// each key's first operation.
func partitionByKey(history []porcupine.Operation) [][]porcupine.Operation {
	index := make(map[string]int)
	var parts [][]porcupine.Operation
	for _, op := range history {
		key := op.Input.(KVInput).Key
		i, ok := index[key]
		if !ok {
			i = len(parts)
			index[key] = i
			parts = append(parts, nil)
		}
		parts[i] = append(parts[i], op)
	}
	return parts
}

// kvStep reports whether the operation could have produced output from
// state, and the state after it.
func kvStep(state, input, output any) (bool, any) {
	s := state.(kvState)
	in := input.(KVInput)
	if IsUnknown(output) {
		return true, kvApply(s, in)
	}
	out := output.(KVOutput)
	switch in.Op {
	case KVOpPut:
		return out.Err == nil, kvState{present: true, value: in.Value}
	case KVOpGet:
		if out.Err != nil || out.Found != s.present {
			return false, s
		}
		return !s.present || out.Value == s.value, s
	case KVOpDelete:
		if s.present {
			return out.Err == nil, kvState{}
		}
		return errors.Is(out.Err, ErrKeyNotFound), s
	case KVOpCreateIfAbsent:
		if s.present {
			return errors.Is(out.Err, ErrKeyExists), s
		}
		return out.Err == nil, kvState{present: true, value: in.Value}
	default:
		panic(fmt.Sprintf("linearizability: unknown KV operation %v", in.Op))
	}
}

// kvApply returns the state after in takes effect on s, whatever it
// returned.
func kvApply(s kvState, in KVInput) kvState {
	switch in.Op {
	case KVOpPut:
		return kvState{present: true, value: in.Value}
	case KVOpGet:
		return s
	case KVOpDelete:
		return kvState{}
	case KVOpCreateIfAbsent:
		if s.present {
			return s
		}
		return kvState{present: true, value: in.Value}
	default:
		panic(fmt.Sprintf("linearizability: unknown KV operation %v", in.Op))
	}
}

// kvHash hashes a kvState; equal states hash equally.
func kvHash(state any) uint64 {
	s := state.(kvState)
	if !s.present {
		return 0
	}
	f := fnv.New64a()
	f.Write([]byte(s.value))
	return f.Sum64() | 1
}

// describeKVOperation renders an operation for the visualisation, for
// example `Get("orders") -> "v3"` or `Put("orders", "v4") -> ? (timeout)`.
func describeKVOperation(input, output any) string {
	in := input.(KVInput)
	var call string
	switch in.Op {
	case KVOpPut, KVOpCreateIfAbsent:
		call = fmt.Sprintf("%v(%q, %q)", in.Op, in.Key, in.Value)
	default:
		call = fmt.Sprintf("%v(%q)", in.Op, in.Key)
	}
	if u, ok := output.(Unknown); ok {
		return call + " -> " + u.String()
	}
	out := output.(KVOutput)
	var result string
	switch {
	case out.Err != nil:
		result = out.Err.Error()
	case in.Op == KVOpGet && out.Found:
		result = fmt.Sprintf("%q", out.Value)
	case in.Op == KVOpGet:
		result = "not found"
	case in.Op == KVOpCreateIfAbsent:
		result = "created"
	default:
		result = "ok"
	}
	return call + " -> " + result
}

// describeKVState renders one key's state for the visualisation.
func describeKVState(state any) string {
	s := state.(kvState)
	if !s.present {
		return "absent"
	}
	return fmt.Sprintf("%q", s.value)
}
