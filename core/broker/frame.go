package broker

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/assert"
	"github.com/strata-log/strata/core/kraft"
	"github.com/strata-log/strata/core/protocol"
)

// requestHeaderFixedBytes is the part of every Kafka request header that
// comes before the client id: api key (int16), api version (int16) and
// correlation id (int32).
const requestHeaderFixedBytes = 8

// unknownKey stands for "no api key could be read" in frameError.
const unknownKey = -1

// frameError says why a request frame closes its connection. It carries
// what could be read of the header for the log line.
type frameError struct {
	key, version  int16
	correlationID int32
	reason        string
}

func (e *frameError) apiName() string {
	if e.key == unknownKey {
		return ""
	}
	return kmsg.NameForKey(e.key)
}

// handleFrame turns one request frame into one response frame (with its
// response header, without the size prefix), or into the reason the
// connection must be closed. It is a pure function of the frame and the
// broker's state and never panics on any input; FuzzHandleFrame checks
// that.
func (b *Broker) handleFrame(frame []byte) ([]byte, *frameError) {
	var out []byte
	ferr := b.handleFrameAsync(frame, func(resp []byte) { out = resp })
	if ferr != nil {
		return nil, ferr
	}
	assert.That(out != nil, "handleFrame on a request answered later")
	return out, nil
}

// handleFrameAsync is handleFrame for requests whose answer may come later
// (those passed to the metadata quorum): reply runs exactly once, now or
// later on the loop, unless a frameError is returned.
func (b *Broker) handleFrameAsync(frame []byte, reply func([]byte)) *frameError {
	resp, ferr := b.decodeAndHandle(frame, reply)
	if ferr != nil {
		return ferr
	}
	if resp != nil {
		reply(resp)
	}
	return nil
}

func (b *Broker) decodeAndHandle(frame []byte, reply func([]byte)) ([]byte, *frameError) {
	if len(frame) < requestHeaderFixedBytes {
		return nil, &frameError{key: unknownKey, version: -1, correlationID: -1,
			reason: fmt.Sprintf("frame of %d bytes is shorter than a request header", len(frame))}
	}
	r := kbin.Reader{Src: frame}
	key, version, correlationID := r.Int16(), r.Int16(), r.Int32()
	fail := func(format string, args ...any) ([]byte, *frameError) {
		return nil, &frameError{key: key, version: version, correlationID: correlationID,
			reason: fmt.Sprintf(format, args...)}
	}

	api, known := protocol.Lookup(key)
	switch {
	case !known && kmsg.RequestForKey(key) != nil:
		return fail("API %s (key %d) is not implemented", kmsg.NameForKey(key), key)
	case !known:
		return fail("unknown API key %d", key)
	case key == kmsg.ApiVersions.Int16() && !api.Supports(version):
		// KIP-511: the body may be in a format we cannot parse, so only
		// the header's fixed part is read, and the answer is a v0
		// response that every client can decode.
		return encodeResponse(correlationID, b.apiVersionsUnsupported(version)), nil
	case !api.Supports(version):
		return fail("version %d not supported (supported %d..%d)", version, api.MinVersion, api.MaxVersion)
	}

	req := kmsg.RequestForKey(key)
	req.SetVersion(version)
	// The client id is a classic nullable string even in flexible header
	// versions (header v2), for compatibility with ApiVersions probing.
	_ = r.NullableString()
	if req.IsFlexible() {
		kmsg.SkipTags(&r)
	}
	if !r.Ok() {
		return fail("malformed request header")
	}
	if err := req.ReadFrom(r.Src); err != nil {
		return fail("malformed %s v%d body: %v", api.Name(), version, err)
	}

	var resp kmsg.Response
	switch req := req.(type) {
	case *kmsg.ApiVersionsRequest:
		resp = b.handleApiVersions(req)
	case *kmsg.MetadataRequest:
		resp = b.handleMetadata(req)
	case *kmsg.CreateTopicsRequest, *kmsg.DeleteTopicsRequest, *kmsg.CreatePartitionsRequest,
		*kmsg.DescribeQuorumRequest:
		if b.cfg.Metadata == nil {
			resp = kraft.ErrorResponse(req, kerr.NotController, "This node has no metadata quorum.")
			break
		}
		// The quorum member answers, forwarding to the quorum leader when
		// its own controller is not the active one.
		b.cfg.Metadata.Submit(req, func(r kmsg.Response, err error) {
			if err != nil || r == nil || r.GetVersion() != version {
				b.log.Warn("controller request failed", "api_name", api.Name(), "err", err)
				r = kraft.ErrorResponse(req, kerr.UnknownServerError, "The controller failed the request.")
			}
			reply(encodeResponse(correlationID, r))
		})
		return nil, nil
	default:
		assert.Never("protocol table lists %s (key %d) but broker has no handler", api.Name(), key)
	}
	assert.That(resp.GetVersion() == version, "%s response version %d for request version %d",
		api.Name(), resp.GetVersion(), version)
	return encodeResponse(correlationID, resp), nil
}

// encodeResponse prepends the response header to the encoded response.
// Flexible versions use response header v1 (with an empty tagged-field
// section), except ApiVersions, whose response always uses header v0 so
// that a client can read it before it knows which versions we speak.
func encodeResponse(correlationID int32, resp kmsg.Response) []byte {
	dst := make([]byte, 0, 256)
	dst = kbin.AppendInt32(dst, correlationID)
	if resp.IsFlexible() && resp.Key() != kmsg.ApiVersions.Int16() {
		dst = append(dst, 0) // no tagged fields
	}
	return resp.AppendTo(dst)
}
