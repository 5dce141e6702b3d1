package attack

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/wire"
)

// dialTimeout bounds a dial to a node.
const dialTimeout = 5 * time.Second

// dialFrom opens a TCP connection to addr from the loopback address from
// (every 127.0.0.x is this machine's on Linux): attackers come from
// addresses of their own, so that per-IP limits tell them from the
// victim.
func dialFrom(from, addr string) (net.Conn, error) {
	d := net.Dialer{Timeout: dialTimeout, LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	return d.Dial("tcp", addr)
}

// corrIDs hands out correlation ids.
var corrIDs atomic.Int32

// encode renders req as a frame with its size prefix, from clientID.
func encode(req kmsg.Request, corr int32, clientID string) []byte {
	return withSize(wire.EncodeRequest(kmsg.NewRequestFormatter(kmsg.FormatterClientID(clientID)), req, corr))
}

func withSize(frame []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(frame))), frame...)
}

// readFrame reads one response frame (without its size prefix).
func readFrame(c net.Conn) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(c, size[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(size[:])
	if n > 512<<20 {
		return nil, fmt.Errorf("response frame of %d bytes", n)
	}
	frame := make([]byte, n)
	if _, err := io.ReadFull(c, frame); err != nil {
		return nil, err
	}
	return frame, nil
}

// roundTrip sends req on c and reads its answer, within timeout.
func roundTrip(c net.Conn, req kmsg.Request, timeout time.Duration) (kmsg.Response, error) {
	if err := c.SetDeadline(time.Now().Add(timeout)); err != nil {
		return nil, err
	}
	corr := corrIDs.Add(1)
	if _, err := c.Write(encode(req, corr, "attack")); err != nil {
		return nil, err
	}
	frame, err := readFrame(c)
	if err != nil {
		return nil, err
	}
	if got, _ := wire.ResponseCorrelationID(frame); got != corr {
		return nil, fmt.Errorf("correlation id %d, sent %d", got, corr)
	}
	return wire.ParseResponse(frame, req)
}

// pipeline sends reqs on c at once and reads their answers in order,
// within timeout; it returns the answers read before an error.
func pipeline(c net.Conn, reqs []kmsg.Request, timeout time.Duration) ([]kmsg.Response, error) {
	if err := c.SetDeadline(time.Now().Add(timeout)); err != nil {
		return nil, err
	}
	first := corrIDs.Add(int32(len(reqs))) - int32(len(reqs)) + 1
	var out []byte
	for i, req := range reqs {
		out = append(out, encode(req, first+int32(i), "attack")...)
	}
	errc := make(chan error, 1)
	go func() { _, err := c.Write(out); errc <- err }()
	resps := make([]kmsg.Response, 0, len(reqs))
	for i, req := range reqs {
		frame, err := readFrame(c)
		if err != nil {
			return resps, err
		}
		if got, _ := wire.ResponseCorrelationID(frame); got != first+int32(i) {
			return resps, fmt.Errorf("correlation id %d, want %d", got, first+int32(i))
		}
		resp, err := wire.ParseResponse(frame, req)
		if err != nil {
			return resps, err
		}
		resps = append(resps, resp)
	}
	return resps, <-errc
}

// metadataRequest asks for topics (nil: every topic) at version v.
func metadataRequest(v int16, topics ...string) *kmsg.MetadataRequest {
	req := kmsg.NewPtrMetadataRequest()
	req.Version = v
	if topics == nil && v >= 1 {
		req.Topics = nil // every topic
	} else {
		req.Topics = []kmsg.MetadataRequestTopic{}
		for _, tp := range topics {
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(tp)
			req.Topics = append(req.Topics, rt)
		}
	}
	return req
}
