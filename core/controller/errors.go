package controller

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/assert"
	"github.com/strata-log/strata/core/meta"
	"github.com/strata-log/strata/core/protocol"
)

// apiError is a Kafka error code with the message that goes with it in a
// response. A nil *apiError is success.
type apiError struct {
	err *kerr.Error
	msg string
}

// errorf builds an apiError.
func errorf(err *kerr.Error, format string, args ...any) *apiError {
	return &apiError{err: err, msg: fmt.Sprintf(format, args...)}
}

// code is the Kafka error code, 0 for success.
func (e *apiError) code() int16 {
	if e == nil {
		return 0
	}
	return e.err.Code
}

// message is the response's error message, nil for success.
func (e *apiError) message() *string {
	if e == nil {
		return nil
	}
	m := e.msg
	return &m
}

// NotControllerResponse answers req with NOT_CONTROLLER in every place its
// response has an error code. It is what a controller that is not the
// active one says to every request, and what a resigning controller says
// to the requests still waiting. None of the controller's response types
// has a field for the active controller's identity: brokers learn it from
// the quorum (they observe the metadata log) and clients from Metadata.
// req must be a kind Supports accepts.
func NotControllerResponse(req kmsg.Request) kmsg.Response {
	return ErrorResponse(req, kerr.NotController, "This node is not the active controller.")
}

// ErrorResponse answers req with err (and msg where the version carries a
// message) in every place its response has an error code, echoing the
// request's topics and resources. req must be a kind Supports accepts.
func ErrorResponse(req kmsg.Request, err *kerr.Error, msg string) kmsg.Response {
	assert.That(Supports(req), "controller: ErrorResponse for unsupported request %T", req)
	return protocol.ErrorResponse(req, err, msg)
}

// changePartition applies change to partition id of a topic (ti, when
// topicOK) named topic, or refuses a partition that does not exist. It
// returns the partition's error code and message for the response: 0 and
// nil when change succeeded.
func changePartition(ti *meta.TopicImage, topicOK bool, topic string, id int32, change func(*meta.Partition) (*kerr.Error, string)) (int16, *string) {
	var part meta.Partition
	ok := false
	if topicOK {
		part, ok = ti.Partition(id)
	}
	if !ok {
		msg := fmt.Sprintf("Partition %s-%d does not exist.", topic, id)
		return kerr.UnknownTopicOrPartition.Code, &msg
	}
	e, msg := change(&part)
	if e == nil {
		return 0, nil
	}
	return e.Code, &msg
}

// createTopicError is a CreateTopics response entry for a failed topic.
func createTopicError(name string, e *apiError) kmsg.CreateTopicsResponseTopic {
	return protocol.CreateTopicsError(name, e.err, e.msg)
}

// alterConfigsResult is a config response entry for one resource; nil e is
// success.
func alterConfigsResult(typ kmsg.ConfigResourceType, name string, e *apiError) kmsg.IncrementalAlterConfigsResponseResource {
	if e == nil {
		return protocol.AlterConfigsError(typ, name, nil, "")
	}
	return protocol.AlterConfigsError(typ, name, e.err, e.msg)
}
