package protocol

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ErrorResponse answers req with err (and msg where the version carries a
// message) in every place its response has an error code, echoing the
// request's topics, partitions and resources. It covers every request kind
// a Strata listener serves or forwards, one family a file
// (errors_cluster.go, errors_partition.go, errors_group.go, errors_txn.go,
// errors_security.go);
// it is how a listener answers a request it cannot serve at all (no active
// controller, a forwarded request whose connection was lost, a node
// shutting down). An unsupported kind is a programming error and panics.
func ErrorResponse(req kmsg.Request, err *kerr.Error, msg string) kmsg.Response {
	f := failure{err: err, msg: msg, code: err.Code}
	for _, family := range errorFamilies {
		if answer, ok := family[kmsg.Key(req.Key())]; ok {
			return answer(req, f)
		}
	}
	panic(fmt.Sprintf("protocol: ErrorResponse for unsupported request %T", req))
}

// errorFamilies are the error answers by request family, each keyed by the
// request's API key (looked up only).
var errorFamilies = []map[kmsg.Key]errorAnswer{clusterErrors, partitionErrors, groupErrors, txnErrors, securityErrors}

// failure is the error a request is answered with.
type failure struct {
	err  *kerr.Error
	msg  string
	code int16
}

// message is the failure's message, for the fields that carry one.
func (f failure) message() *string { return &f.msg }

// errorAnswer builds the error response to a request.
type errorAnswer func(req kmsg.Request, f failure) kmsg.Response

// answer makes an errorAnswer of fill, which sets the error in Resp, the
// response kind of Req.
func answer[Req kmsg.Request, Resp kmsg.Response](fill func(req Req, resp Resp, f failure)) errorAnswer {
	return func(req kmsg.Request, f failure) kmsg.Response {
		r := req.(Req)
		resp := r.ResponseKind().(Resp)
		fill(r, resp, f)
		return resp
	}
}

// each maps every element of in through f: a response's topics from a
// request's, a topic's partitions from the request topic's.
func each[In, Out any](in []In, f func(In) Out) []Out {
	if len(in) == 0 {
		return nil
	}
	out := make([]Out, 0, len(in))
	for _, x := range in {
		out = append(out, f(x))
	}
	return out
}

// CreateTopicsError is a CreateTopics response entry for a failed topic:
// Kafka reports -1 partitions and replication factor with an error.
func CreateTopicsError(name string, err *kerr.Error, msg string) kmsg.CreateTopicsResponseTopic {
	rt := kmsg.NewCreateTopicsResponseTopic()
	rt.Topic = name
	rt.ErrorCode, rt.ErrorMessage = err.Code, &msg
	rt.NumPartitions, rt.ReplicationFactor = -1, -1
	return rt
}

// AlterConfigsError is an (Incremental)AlterConfigs response entry for a
// resource that failed with err.
func AlterConfigsError(typ kmsg.ConfigResourceType, name string, err *kerr.Error, msg string) kmsg.IncrementalAlterConfigsResponseResource {
	rr := kmsg.NewIncrementalAlterConfigsResponseResource()
	rr.ResourceType, rr.ResourceName = typ, name
	if err != nil {
		rr.ErrorCode, rr.ErrorMessage = err.Code, &msg
	}
	return rr
}

// DeleteTopicsEntries lists a DeleteTopics request's topics in the version
// 6 form: versions 0 to 5 name topics in TopicNames.
func DeleteTopicsEntries(req *kmsg.DeleteTopicsRequest) []kmsg.DeleteTopicsRequestTopic {
	if req.Version >= 6 {
		return req.Topics
	}
	out := make([]kmsg.DeleteTopicsRequestTopic, len(req.TopicNames))
	for i := range req.TopicNames {
		out[i] = kmsg.NewDeleteTopicsRequestTopic()
		out[i].Topic = &req.TopicNames[i]
	}
	return out
}
