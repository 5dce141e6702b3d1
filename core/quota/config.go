package quota

import (
	"fmt"
	"time"
)

// Defaults of Config's zero fields, Kafka's.
const (
	// DefaultWindowNum is quota.window.num and controller.quota.window.num.
	DefaultWindowNum = 11
	// DefaultWindowSize is quota.window.size.seconds and
	// controller.quota.window.size.seconds.
	DefaultWindowSize = time.Second
	// DefaultSensorIdleExpiry is how long a sensor no request touches is
	// kept (ClientQuotaManager.InactiveSensorExpirationTimeSeconds).
	DefaultSensorIdleExpiry = time.Hour
)

// Config holds the broker-wide quota settings. A zero field means its
// default.
type Config struct {
	// WindowNum is quota.window.num: samples kept by the byte-rate,
	// request and connection-rate sensors (DefaultWindowNum).
	WindowNum int
	// WindowSize is quota.window.size.seconds: the span of one sample
	// (DefaultWindowSize). It also bounds request_percentage and
	// connection_creation_rate throttles, as Kafka's maxThrottleTimeMs.
	WindowSize time.Duration
	// ControllerWindowNum is controller.quota.window.num: with
	// ControllerWindowSize it sets the token bucket's burst for
	// controller_mutation_rate (DefaultWindowNum).
	ControllerWindowNum int
	// ControllerWindowSize is controller.quota.window.size.seconds
	// (DefaultWindowSize).
	ControllerWindowSize time.Duration
	// MaxByteRateThrottle bounds the throttle of producer_byte_rate and
	// consumer_byte_rate. Kafka leaves it unbounded; zero means that,
	// up to MaxWireThrottle, the most a response can carry.
	MaxByteRateThrottle time.Duration
	// SensorIdleExpiry is how long an untouched sensor is kept before
	// Expire drops it (DefaultSensorIdleExpiry).
	SensorIdleExpiry time.Duration
}

// Validate refuses negative fields and windows below a millisecond (Kafka
// counts in milliseconds).
func (c Config) Validate() error {
	if c.WindowNum < 0 || c.ControllerWindowNum < 0 {
		return fmt.Errorf("quota: window counts must not be negative: %d, %d", c.WindowNum, c.ControllerWindowNum)
	}
	for _, d := range []time.Duration{c.WindowSize, c.ControllerWindowSize} {
		if d < 0 || (d > 0 && d < time.Millisecond) {
			return fmt.Errorf("quota: window size %v must be zero (default) or at least 1ms", d)
		}
	}
	if c.MaxByteRateThrottle < 0 || c.SensorIdleExpiry < 0 {
		return fmt.Errorf("quota: durations must not be negative")
	}
	return nil
}

// withDefaults fills the zero fields.
func (c Config) withDefaults() Config {
	if c.WindowNum == 0 {
		c.WindowNum = DefaultWindowNum
	}
	if c.WindowSize == 0 {
		c.WindowSize = DefaultWindowSize
	}
	if c.ControllerWindowNum == 0 {
		c.ControllerWindowNum = DefaultWindowNum
	}
	if c.ControllerWindowSize == 0 {
		c.ControllerWindowSize = DefaultWindowSize
	}
	if c.MaxByteRateThrottle == 0 || c.MaxByteRateThrottle > MaxWireThrottle {
		c.MaxByteRateThrottle = MaxWireThrottle
	}
	if c.SensorIdleExpiry == 0 {
		c.SensorIdleExpiry = DefaultSensorIdleExpiry
	}
	return c
}
