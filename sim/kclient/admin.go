package kclient

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TopicSpec describes a topic to create.
type TopicSpec struct {
	Name              string
	Partitions        int32
	ReplicationFactor int16
	// Configs are topic configs (key, value), in order.
	Configs [][2]string
}

// CreateTopic creates a topic through any broker (which passes it to the
// controller), retrying with backoff until it exists; done runs once with
// true when this call created it or it already existed, and with false if
// the controller refused it for good (an invalid spec).
func (c *Client) CreateTopic(spec TopicSpec, done func(ok bool, code int16)) {
	c.createTopic(spec, 0, done)
}

func (c *Client) createTopic(spec TopicSpec, failures int, done func(bool, int16)) {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = int32(c.cfg.RequestTimeout.Milliseconds())
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = spec.Name, spec.Partitions, spec.ReplicationFactor
	for _, kv := range spec.Configs {
		cfg := kmsg.NewCreateTopicsRequestTopicConfig()
		cfg.Name, cfg.Value = kv[0], kmsg.StringPtr(kv[1])
		t.Configs = append(t.Configs, cfg)
	}
	req.Topics = []kmsg.CreateTopicsRequestTopic{t}
	c.DoAny(req, func(r kmsg.Response, err error) {
		if c.closed {
			return
		}
		resp, ok := r.(*kmsg.CreateTopicsResponse)
		code := int16(-1)
		if err == nil && ok && len(resp.Topics) == 1 {
			code = resp.Topics[0].ErrorCode
		}
		switch {
		case code == 0 || code == kerr.TopicAlreadyExists.Code:
			c.AddTopics(spec.Name)
			done(true, code)
		case code > 0 && !kerr.IsRetriable(kerr.ErrorForCode(code)) && code != kerr.NotController.Code && code != kerr.UnknownServerError.Code:
			done(false, code)
		default:
			c.log.Debug("CreateTopics failed; retrying", "topic", spec.Name, "code", codeName(code), "err", err)
			c.e.AfterFunc(c.backoff(failures+1), func() { c.createTopic(spec, failures+1, done) })
		}
	})
}
