package wire

import (
	"fmt"
	"log/slog"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/env"
)

// ClientConfig configures a Client.
type ClientConfig struct {
	// ClientID is the request header's client id.
	ClientID string
	// MaxInflight bounds the requests awaiting a response
	// (DefaultMaxInflight when zero).
	MaxInflight int
	// OnClose, if set, runs once when the connection ends, after every
	// pending callback got ErrConnClosed.
	OnClose func(err error)
	// Logger receives the reason a connection is closed for a bad
	// response; nil discards it.
	Logger *slog.Logger
}

// DefaultMaxInflight is ClientConfig.MaxInflight's default: generous for
// pipelining, a bound on what a peer that never answers can pin.
const DefaultMaxInflight = 1024

// Client is the client side of one Kafka connection: it sends requests
// with increasing correlation ids and completes each with the response of
// the same id, whatever order the peer answers in (Kafka brokers answer in
// order, Strata's quorum listener does not). It runs on the conn's loop.
//
// A response with an id no request awaits, or one that does not decode,
// closes the connection: the stream can no longer be trusted.
type Client struct {
	conn      env.Conn
	cfg       ClientConfig
	formatter *kmsg.RequestFormatter
	nextCorr  int32
	pending   []*call // in send order
	closed    bool
	closeErr  error
}

type call struct {
	corr int32
	req  kmsg.Request
	done func(kmsg.Response, error)
}

// setDefaults gives a zero in-flight bound its default and a nil logger
// one that discards.
func setDefaults(maxInflight *int, logger **slog.Logger) {
	if *maxInflight <= 0 {
		*maxInflight = DefaultMaxInflight
	}
	if *logger == nil {
		*logger = slog.New(slog.DiscardHandler)
	}
}

// NewClient takes over conn: it registers the conn's OnFrame and OnClose
// handlers, so it must be called from Dial's callback (or an accept
// callback), as env.Net requires.
func NewClient(conn env.Conn, cfg ClientConfig) *Client {
	setDefaults(&cfg.MaxInflight, &cfg.Logger)
	c := &Client{conn: conn, cfg: cfg, formatter: kmsg.NewRequestFormatter(kmsg.FormatterClientID(cfg.ClientID))}
	conn.OnFrame(c.onFrame)
	conn.OnClose(c.onClose)
	return c
}

// Conn is the connection the client runs on.
func (c *Client) Conn() env.Conn { return c.conn }

// Closed reports whether the connection has ended.
func (c *Client) Closed() bool { return c.closed }

// Inflight is the number of requests awaiting a response.
func (c *Client) Inflight() int { return len(c.pending) }

// Do sends req and calls done once, later on the loop, with the response
// decoded at req's version, or with an error wrapping ErrConnClosed when
// the connection ends first. It returns an error (and never calls done)
// when the request cannot be sent: the connection has ended, or
// MaxInflight requests are pending.
func (c *Client) Do(req kmsg.Request, done func(kmsg.Response, error)) error {
	if c.closed {
		return fmt.Errorf("%w: %v", ErrConnClosed, c.closeErr)
	}
	if len(c.pending) >= c.cfg.MaxInflight {
		return fmt.Errorf("%w: %d", ErrTooManyInflight, len(c.pending))
	}
	corr := c.corr()
	if err := c.conn.Send(EncodeRequest(c.formatter, req, corr)); err != nil {
		return fmt.Errorf("%w: %w", ErrConnClosed, err)
	}
	c.pending = append(c.pending, &call{corr: corr, req: req, done: done})
	return nil
}

// Send sends a request that gets no response (a Produce with acks=0).
func (c *Client) Send(req kmsg.Request) error {
	if c.closed {
		return fmt.Errorf("%w: %v", ErrConnClosed, c.closeErr)
	}
	return c.conn.Send(EncodeRequest(c.formatter, req, c.corr()))
}

func (c *Client) corr() int32 {
	corr := c.nextCorr
	c.nextCorr++
	if c.nextCorr < 0 {
		c.nextCorr = 0
	}
	return corr
}

// Close ends the connection; pending requests fail with ErrConnClosed.
func (c *Client) Close() { c.conn.Close() }

func (c *Client) onFrame(frame []byte) {
	if c.closed {
		return
	}
	corr, ok := ResponseCorrelationID(frame)
	i := -1
	if ok {
		i = slices.IndexFunc(c.pending, func(p *call) bool { return p.corr == corr })
	}
	if i < 0 {
		c.cfg.Logger.Warn("response with an unknown correlation id; closing the connection",
			"remote", c.conn.RemoteAddr(), "correlation_id", corr)
		c.conn.Close()
		return
	}
	p := c.pending[i]
	resp, err := ParseResponse(frame, p.req)
	if err != nil {
		c.cfg.Logger.Warn("malformed response; closing the connection", "remote", c.conn.RemoteAddr(), "err", err)
		c.conn.Close()
		return
	}
	c.pending = slices.Delete(c.pending, i, i+1)
	p.done(resp, nil)
}

func (c *Client) onClose(err error) {
	c.closed, c.closeErr = true, err
	pending := c.pending
	c.pending = nil
	for _, p := range pending {
		p.done(nil, fmt.Errorf("%w (%s to %s): %v", ErrConnClosed, kmsg.NameForKey(p.req.Key()), c.conn.RemoteAddr(), err))
	}
	if c.cfg.OnClose != nil {
		c.cfg.OnClose(err)
	}
}
