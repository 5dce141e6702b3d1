package node

// The internal tests' raw-connection helpers, for the external (node_test)
// tests.
var (
	DialRawWithin = dialRawWithin
	ReadRawFrame  = readRawFrame
)
