package quota

import (
	"errors"
	"fmt"
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Key is a client quota configuration key (QuotaConfig's
// *_OVERRIDE_CONFIG names).
type Key string

// The quota keys Kafka 4.x accepts in AlterClientQuotas.
const (
	// ProducerByteRate is producer_byte_rate (KIP-13): bytes per second
	// produced, a LONG.
	ProducerByteRate Key = "producer_byte_rate"
	// ConsumerByteRate is consumer_byte_rate (KIP-13): bytes per second
	// fetched, a LONG.
	ConsumerByteRate Key = "consumer_byte_rate"
	// RequestPercentage is request_percentage (KIP-124): request-handler
	// and network thread time as a percentage of one thread's time per
	// window (100 = one whole thread), a DOUBLE.
	RequestPercentage Key = "request_percentage"
	// ControllerMutationRate is controller_mutation_rate (KIP-599):
	// partitions created or deleted per second, a DOUBLE.
	ControllerMutationRate Key = "controller_mutation_rate"
	// ConnectionCreationRate is connection_creation_rate (KIP-612):
	// connections accepted per second from one IP, an INT, on IP
	// entities only.
	ConnectionCreationRate Key = "connection_creation_rate"
)

// valueType is the ConfigDef type of a key, which bounds its values.
type valueType int

const (
	typeDouble valueType = iota
	typeInt
	typeLong
)

// keyTypes is the one table of quota keys: which entities take them and
// the type of their values (QuotaConfig.userAndClientQuotaConfigs and
// ipConfigs).
var keyTypes = []struct {
	key    Key
	ip     bool // an IP entity's key, else a user/client-id entity's
	values valueType
}{
	{ProducerByteRate, false, typeLong},
	{ConsumerByteRate, false, typeLong},
	{RequestPercentage, false, typeDouble},
	{ControllerMutationRate, false, typeDouble},
	{ConnectionCreationRate, true, typeInt},
}

// ErrInvalidRequest is the error every validation failure wraps: Kafka
// answers AlterClientQuotas and DescribeClientQuotas with INVALID_REQUEST
// for them.
var ErrInvalidRequest error = kerr.InvalidRequest

// ErrUnsupportedVersion is what Describe wraps for an entity type it does
// not know (Kafka answers UNSUPPORTED_VERSION).
var ErrUnsupportedVersion error = kerr.UnsupportedVersion

// ErrThrottlingQuotaExceeded is returned by a strict RecordMutations
// (KIP-599): the request is rejected, THROTTLING_QUOTA_EXCEEDED.
var ErrThrottlingQuotaExceeded error = kerr.ThrottlingQuotaExceeded

// validateKeyValue is ClientQuotaControlManager.validateQuotaKeyValue for
// one key set on e: a key the entity takes, a value above zero, and for
// INT and LONG keys a whole number in range. NaN and infinities are
// refused too (they cannot arrive as JSON numbers in Kafka's tools, but
// can on the wire as a float64).
func validateKeyValue(e Entity, k Key, v float64) error {
	for _, kt := range keyTypes {
		if kt.key != k {
			continue
		}
		if kt.ip != e.isIP() {
			return invalidf("invalid configuration key %s for entity %s", k, e)
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return invalidf("quota %s must be a finite number", k)
		}
		if v <= 0 {
			return invalidf("quota %s must be greater than 0", k)
		}
		switch kt.values {
		case typeInt:
			if v > math.MaxInt32 {
				return invalidf("proposed value for %s is too large for an INT", k)
			}
		case typeLong:
			if v >= math.MaxInt64 { // float64(MaxInt64) is 2^63, one past the range
				return invalidf("proposed value for %s is too large for a LONG", k)
			}
		}
		if kt.values != typeDouble && math.Abs(math.Mod(v, 1)) > 1e-6 {
			return invalidf("%s cannot be a fractional value", k)
		}
		return nil
	}
	return invalidf("invalid configuration key %s", k)
}

// IsThrottled says err is a strict controller mutation quota's refusal.
func IsThrottled(err error) bool { return errors.Is(err, ErrThrottlingQuotaExceeded) }

// RequestError is an error Kafka answers with an error code: Code is the
// kerr error (errors.Is matches it, and ErrInvalidRequest and its
// siblings), and Error is the message for the response's error_message.
type RequestError struct {
	Code    *kerr.Error
	Message string
}

// Error returns Message alone, fit for a response's error_message.
func (e *RequestError) Error() string { return e.Message }

// Unwrap returns Code.
func (e *RequestError) Unwrap() error { return e.Code }

func requestErrorf(code *kerr.Error, format string, args ...any) error {
	return &RequestError{Code: code, Message: fmt.Sprintf(format, args...)}
}

func invalidf(format string, args ...any) error {
	return requestErrorf(kerr.InvalidRequest, format, args...)
}
