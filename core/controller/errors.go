package controller

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/assert"
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
	e := &apiError{err: err, msg: msg}
	switch r := req.(type) {
	case *kmsg.BrokerRegistrationRequest:
		resp := r.ResponseKind().(*kmsg.BrokerRegistrationResponse)
		resp.ErrorCode = e.code()
		resp.BrokerEpoch = -1
		return resp
	case *kmsg.BrokerHeartbeatRequest:
		resp := r.ResponseKind().(*kmsg.BrokerHeartbeatResponse)
		resp.ErrorCode = e.code()
		return resp
	case *kmsg.CreateTopicsRequest:
		resp := r.ResponseKind().(*kmsg.CreateTopicsResponse)
		for _, t := range r.Topics {
			resp.Topics = append(resp.Topics, createTopicError(t.Topic, e))
		}
		return resp
	case *kmsg.DeleteTopicsRequest:
		resp := r.ResponseKind().(*kmsg.DeleteTopicsResponse)
		for _, t := range deleteTopicsEntries(r) {
			rt := kmsg.NewDeleteTopicsResponseTopic()
			rt.Topic, rt.TopicID, rt.ErrorCode, rt.ErrorMessage = t.Topic, t.TopicID, e.code(), e.message()
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	case *kmsg.CreatePartitionsRequest:
		resp := r.ResponseKind().(*kmsg.CreatePartitionsResponse)
		for _, t := range r.Topics {
			rt := kmsg.NewCreatePartitionsResponseTopic()
			rt.Topic, rt.ErrorCode, rt.ErrorMessage = t.Topic, e.code(), e.message()
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	case *kmsg.AlterPartitionRequest:
		resp := r.ResponseKind().(*kmsg.AlterPartitionResponse)
		resp.ErrorCode = e.code()
		return resp
	case *kmsg.AllocateProducerIDsRequest:
		resp := r.ResponseKind().(*kmsg.AllocateProducerIDsResponse)
		resp.ErrorCode = e.code()
		return resp
	case *kmsg.IncrementalAlterConfigsRequest:
		resp := r.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
		for _, res := range r.Resources {
			resp.Resources = append(resp.Resources, alterConfigsResult(res.ResourceType, res.ResourceName, e))
		}
		return resp
	case *kmsg.AlterConfigsRequest:
		resp := r.ResponseKind().(*kmsg.AlterConfigsResponse)
		for _, res := range r.Resources {
			rr := alterConfigsResult(res.ResourceType, res.ResourceName, e)
			resp.Resources = append(resp.Resources, kmsg.AlterConfigsResponseResource{
				ErrorCode: rr.ErrorCode, ErrorMessage: rr.ErrorMessage, ResourceType: rr.ResourceType, ResourceName: rr.ResourceName,
			})
		}
		return resp
	}
	assert.Never("controller: ErrorResponse for unsupported request %T", req)
	return nil
}

// createTopicError is a CreateTopics response entry for a failed topic:
// Kafka reports -1 partitions and replication factor with an error.
func createTopicError(name string, e *apiError) kmsg.CreateTopicsResponseTopic {
	rt := kmsg.NewCreateTopicsResponseTopic()
	rt.Topic = name
	rt.ErrorCode, rt.ErrorMessage = e.code(), e.message()
	rt.NumPartitions, rt.ReplicationFactor = -1, -1
	return rt
}

// alterConfigsResult is a config response entry for one resource.
func alterConfigsResult(typ kmsg.ConfigResourceType, name string, e *apiError) kmsg.IncrementalAlterConfigsResponseResource {
	rr := kmsg.NewIncrementalAlterConfigsResponseResource()
	rr.ResourceType, rr.ResourceName = typ, name
	rr.ErrorCode, rr.ErrorMessage = e.code(), e.message()
	return rr
}
