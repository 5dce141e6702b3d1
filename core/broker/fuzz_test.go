package broker

import (
	"encoding/binary"
	"log/slog"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/meta"
	"github.com/strata-log/strata/core/protocol"
	"github.com/strata-log/strata/core/wire"
)

// FuzzHandleFrame feeds arbitrary frames to the request decoder. Whatever
// the bytes, the broker must not panic, and when it answers, the answer
// must echo the correlation id and decode as the response kmsg expects for
// that request. The committed corpus in testdata/fuzz/FuzzHandleFrame
// holds valid requests of every supported key and version and known bad
// shapes; run `go test -fuzz=FuzzHandleFrame ./core/broker` to search for
// more.
func FuzzHandleFrame(f *testing.F) {
	for req := range servedRequests() {
		if r, ok := req.(*kmsg.MetadataRequest); ok {
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr("t")
			r.Topics = append(r.Topics, rt)
		}
		f.Add(encodeRequest(req, int32(req.GetVersion())))
	}
	f.Add([]byte{})
	f.Add([]byte{0, 18, 0, 127, 0, 0, 0, 1})
	f.Add([]byte{0x27, 0x0f, 0, 0, 0, 0, 0, 1, 0xff, 0xff})

	e := newFuzzEnv(f)
	f.Fuzz(func(t *testing.T, frame []byte) {
		resp, closed := e.exchange(frame)
		if closed {
			if resp != nil {
				t.Fatalf("both a response and a close")
			}
			return
		}
		if resp == nil {
			if produceAcksZero(frame) {
				return // acks=0 gets no response
			}
			t.Fatalf("neither a response nor a close for %x", frame)
		}
		if len(resp) < 4 || len(frame) < 8 {
			t.Fatalf("response %x to frame %x", resp, frame)
		}
		if got, want := binary.BigEndian.Uint32(resp), binary.BigEndian.Uint32(frame[4:]); got != want {
			t.Fatalf("correlation id %d, want %d", got, want)
		}
		key := int16(binary.BigEndian.Uint16(frame))
		version := int16(binary.BigEndian.Uint16(frame[2:]))
		api, _ := APIs().Lookup(key)
		if !api.Supports(version) {
			version = 0 // the KIP-511 answer
		}
		kresp := kmsg.ResponseForKey(key)
		kresp.SetVersion(version)
		body := resp[4:]
		if kresp.IsFlexible() && key != kmsg.ApiVersions.Int16() {
			body = body[1:]
		}
		if err := kresp.ReadFrom(body); err != nil {
			t.Fatalf("%s v%d response does not decode: %v", api.Name(), version, err)
		}
	})
}

func newFuzzEnv(f *testing.F) *fakeEnv {
	e := newFakeEnv()
	e.logger = slog.New(slog.DiscardHandler) // millions of inputs: keep no log
	_, err := New(e, Config{
		NodeID: testNodeID, ClusterID: testClusterID,
		ListenAddr: "127.0.0.1:0", AdvertisedHost: testHost,
		// An image with brokers, topics and configs, so that the
		// describing handlers walk real data; controller requests get
		// NOT_CONTROLLER (a quorum without a leader).
		Metadata:      &notControllerMetadata{e: e, img: testImage(f)},
		StaticConfigs: []StaticConfig{{Name: "log.segment.bytes", Value: "2048", Set: true, Default: "1073741824"}},
		LogDir:        "/data",
	})
	if err != nil {
		f.Fatal(err)
	}
	return e
}

// produceAcksZero reports whether frame is a Produce request with acks=0,
// which gets no response.
func produceAcksZero(frame []byte) bool {
	if len(frame) < 4 || int16(binary.BigEndian.Uint16(frame)) != kmsg.Produce.Int16() {
		return false
	}
	_, req, err := wire.ParseRequest(APIs(), frame)
	return err == nil && req.(*kmsg.ProduceRequest).Acks == 0
}

// notControllerMetadata serves an image and answers every submitted
// request, on the next loop turn, with NOT_CONTROLLER.
type notControllerMetadata struct {
	e   *fakeEnv
	img *meta.Image
}

func (m *notControllerMetadata) Image() *meta.Image { return m.img }
func (m *notControllerMetadata) Submit(req kmsg.Request, done func(kmsg.Response, error)) {
	m.e.Post(func() { done(protocol.ErrorResponse(req, kerr.NotController, "no leader"), nil) })
}
