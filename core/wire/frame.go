package wire

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/protocol"
)

// requestHeaderFixedBytes is the part of every Kafka request header that
// comes before the client id: api key (int16), api version (int16) and
// correlation id (int32).
const requestHeaderFixedBytes = 8

// NoKey stands for "no api key could be read" in a RequestHeader.
const NoKey = -1

// RequestHeader is what a request frame says of itself before its body.
type RequestHeader struct {
	Key, Version  int16
	CorrelationID int32
	// ClientID is the header's client id; nil when the client sent null.
	ClientID *string
}

// APIName is the Kafka name of the header's key, or "" when none was read.
func (h RequestHeader) APIName() string {
	if h.Key == NoKey {
		return ""
	}
	return kmsg.NameForKey(h.Key)
}

// FrameError says why a request frame cannot be served. Kafka closes the
// connection on such a frame, and so do Strata's listeners, after logging
// Reason with what could be read of the header.
type FrameError struct {
	Header RequestHeader
	Reason string
}

func (e *FrameError) Error() string {
	if e.Header.Key == NoKey {
		return e.Reason
	}
	return fmt.Sprintf("%s v%d (correlation id %d): %s", e.Header.APIName(), e.Header.Version, e.Header.CorrelationID, e.Reason)
}

// ErrApiVersionsTooNew is ParseRequest's answer to an ApiVersions request
// at a version the table does not implement. Its body may be in a format
// we cannot parse, so only the header's fixed part was read; the listener
// answers Table.ApiVersionsUnsupported (KIP-511) and keeps the connection.
var ErrApiVersionsTooNew = errors.New("wire: ApiVersions request newer than supported")

// ParseRequest decodes a request frame (without its size prefix) that the
// listener's table t serves. It returns the header and the decoded request, or a
// *FrameError (an unknown key, an unsupported version, a malformed header
// or body), or ErrApiVersionsTooNew with the header. It never panics on
// any input, and decodes nothing it does not serve.
func ParseRequest(t protocol.Table, frame []byte) (RequestHeader, kmsg.Request, error) {
	hdr := RequestHeader{Key: NoKey, Version: -1, CorrelationID: -1}
	if len(frame) < requestHeaderFixedBytes {
		return hdr, nil, &FrameError{Header: hdr, Reason: fmt.Sprintf("frame of %d bytes is shorter than a request header", len(frame))}
	}
	r := kbin.Reader{Src: frame}
	hdr.Key, hdr.Version, hdr.CorrelationID = r.Int16(), r.Int16(), r.Int32()
	fail := func(format string, args ...any) (RequestHeader, kmsg.Request, error) {
		return hdr, nil, &FrameError{Header: hdr, Reason: fmt.Sprintf(format, args...)}
	}
	api, known := t.Lookup(hdr.Key)
	switch {
	case !known && kmsg.RequestForKey(hdr.Key) != nil:
		return fail("API %s (key %d) is not served on this listener", kmsg.NameForKey(hdr.Key), hdr.Key)
	case !known:
		return fail("unknown API key %d", hdr.Key)
	case hdr.Key == kmsg.ApiVersions.Int16() && !api.Supports(hdr.Version):
		return hdr, nil, ErrApiVersionsTooNew
	case !api.Supports(hdr.Version):
		return fail("version %d not supported (supported %d..%d)", hdr.Version, api.MinVersion, api.MaxVersion)
	}
	req := kmsg.RequestForKey(hdr.Key)
	req.SetVersion(hdr.Version)
	// The client id is a classic nullable string even in flexible header
	// versions (header v2), for compatibility with ApiVersions probing.
	hdr.ClientID = r.NullableString()
	if req.IsFlexible() {
		kmsg.SkipTags(&r)
	}
	if !r.Ok() {
		return fail("malformed request header")
	}
	// kmsg decodes byte fields (a produce request's records) as slices of
	// the frame, without copying.
	if err := req.ReadFrom(r.Src); err != nil {
		return fail("malformed %s v%d body: %v", api.Name(), hdr.Version, err)
	}
	return hdr, req, nil
}

// AppendResponseHeader appends a response header: the correlation id and,
// for flexible versions, an empty tagged-field section (header v1), except
// for ApiVersions, whose response always uses header v0 so that a client
// can read it before it knows which versions we speak.
func AppendResponseHeader(dst []byte, correlationID int32, key int16, flexible bool) []byte {
	dst = kbin.AppendInt32(dst, correlationID)
	if flexible && key != kmsg.ApiVersions.Int16() {
		dst = append(dst, 0) // no tagged fields
	}
	return dst
}

// EncodeResponse renders a response frame (header and body, without the
// size prefix, which env.Net adds).
func EncodeResponse(correlationID int32, resp kmsg.Response) []byte {
	dst := make([]byte, 0, 256)
	dst = AppendResponseHeader(dst, correlationID, resp.Key(), resp.IsFlexible())
	return resp.AppendTo(dst)
}

// EncodeRequest renders a request frame (header and body, without the size
// prefix) as formatter writes it.
func EncodeRequest(formatter *kmsg.RequestFormatter, req kmsg.Request, correlationID int32) []byte {
	// AppendRequest writes the 4-byte size prefix, which env.Net adds itself.
	return formatter.AppendRequest(nil, req, correlationID)[4:]
}

// ResponseCorrelationID reads the correlation id a response frame starts
// with.
func ResponseCorrelationID(frame []byte) (int32, bool) {
	r := kbin.Reader{Src: frame}
	corr := r.Int32()
	return corr, r.Ok()
}

// ParseResponse decodes a response frame to req (whose key and version
// say how), after its correlation id.
func ParseResponse(frame []byte, req kmsg.Request) (kmsg.Response, error) {
	r := kbin.Reader{Src: frame}
	_ = r.Int32()
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	if resp.IsFlexible() && resp.Key() != kmsg.ApiVersions.Int16() {
		kmsg.SkipTags(&r)
	}
	if !r.Ok() {
		return nil, fmt.Errorf("wire: malformed %s response header", kmsg.NameForKey(req.Key()))
	}
	if err := resp.ReadFrom(r.Src); err != nil {
		return nil, fmt.Errorf("wire: malformed %s v%d response: %w", kmsg.NameForKey(req.Key()), req.GetVersion(), err)
	}
	return resp, nil
}
