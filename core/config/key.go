package config

import "fmt"

// Key is a row that sets a typed field of the configuration C it belongs
// to: the row names the key, parses and bounds its value and documents
// it; Set applies the parsed value. The broker keys are
// Key[server.Config] (core/server keys.go), the production process's own
// keys Key[node.Config] (node keys.go), so the package that owns a field
// owns its key.
type Key[C any] struct {
	Row
	// Dynamic reports whether the key may change while the server runs
	// (Kafka's dynamic broker configs). Every broker key is static today:
	// it is read at start.
	Dynamic bool
	// Set applies a value that parsed. It does not fail: every check is
	// the row's, or, across keys, the config's validation.
	Set func(c *C, v Value)
}

// Keys is a table of keys of C, in the order docs/operations.md lists
// them.
type Keys[C any] []Key[C]

// Find returns the key named name.
func (t Keys[C]) Find(name string) (*Key[C], bool) {
	for i := range t {
		if t[i].Name == name {
			return &t[i], true
		}
	}
	return nil, false
}

// Apply parses value for the key named name and sets it in c. known is
// false for a key the table does not have; err names the key and value
// and wraps ErrInvalidValue.
func (t Keys[C]) Apply(c *C, name, value string) (known bool, err error) {
	k, ok := t.Find(name)
	if !ok {
		return false, nil
	}
	v, err := k.Parse(value)
	if err != nil {
		return true, fmt.Errorf("%s=%q: %w", name, value, err)
	}
	k.Set(c, v)
	return true, nil
}
