package wire

import "errors"

// The errors a request's callback gets, wrapped with the detail.
var (
	// ErrConnClosed: the connection ended before the response came. The
	// request may or may not have been served.
	ErrConnClosed = errors.New("wire: connection closed before the response")
	// ErrTooManyInflight: the request was refused because MaxInflight
	// requests await responses; nothing was sent.
	ErrTooManyInflight = errors.New("wire: too many requests in flight")
	// ErrPeerClosed: the peer was closed (or reset) before the request
	// was sent.
	ErrPeerClosed = errors.New("wire: peer closed before the request was sent")
	// ErrQueueFull: the request waited for a peer's connection among
	// PeerConfig.MaxQueued others and was the oldest when one more came.
	ErrQueueFull = errors.New("wire: dropped from a full queue")
)
