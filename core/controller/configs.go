package controller

import (
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/config"
	"github.com/strata-log/strata/core/meta"
)

// Bounds on config values, so that a request cannot bloat every snapshot.
const (
	// maxConfigValueBytes bounds one config value.
	maxConfigValueBytes = 32 << 10
)

// checkTopicConfig validates one key and value for a topic against the
// table of topic configs (core/config), whose valid values are what the
// partitions can apply: a value they could not use is refused here with
// INVALID_CONFIG and the reason, never accepted and then skipped.
func checkTopicConfig(key string, value *string) (*config.Row, *apiError) {
	tc, ok := config.TopicRow(key)
	if !ok {
		return nil, errorf(kerr.InvalidConfig, "Unknown topic config name: %s", key)
	}
	if value == nil {
		return nil, errorf(kerr.InvalidRequest, "Null value not supported for topic config: %s", key)
	}
	if len(*value) > maxConfigValueBytes {
		return nil, errorf(kerr.InvalidConfig, "The value of %s has %d bytes (at most %d).", key, len(*value), maxConfigValueBytes)
	}
	if err := tc.Validate(*value); err != nil {
		return nil, errorf(kerr.InvalidConfig, "Invalid value %s for configuration %s: %v", *value, key, err)
	}
	return tc, nil
}

// topicResource is the config resource of a topic.
func topicResource(name string) meta.ConfigResource {
	return meta.ConfigResource{Type: meta.ConfigResourceTopic, Name: name}
}

// configRecord builds a ConfigRecord for a topic key; a nil value deletes.
// The record does not alias value.
func configRecord(topic, key string, value *string) *meta.ConfigRecord {
	if value != nil {
		v := *value
		value = &v
	}
	return &meta.ConfigRecord{ResourceType: meta.ConfigResourceTopic, ResourceName: topic, Key: key, Value: value}
}

// describeTopicConfigs lists every topic config with its effective value
// and source, sorted by name, for a CreateTopics response (version 5+):
// the topic's own value, else the cluster-wide default from the image,
// else Kafka's default.
func describeTopicConfigs(img *meta.Image, set map[string]string) []kmsg.CreateTopicsResponseTopicConfig {
	rows := config.TopicRows()
	out := make([]kmsg.CreateTopicsResponseTopicConfig, len(rows))
	for i, tc := range rows {
		rc := kmsg.NewCreateTopicsResponseTopicConfig()
		rc.Name = tc.Name
		value, source := tc.Default, kmsg.ConfigSourceDefaultConfig
		if v, ok := set[tc.Name]; ok {
			value, source = v, kmsg.ConfigSourceDynamicTopicConfig
		} else if tc.ServerDefault != "" {
			if v, ok := img.ConfigValue(meta.ClusterConfigResource, tc.ServerDefault); ok {
				value, source = v, kmsg.ConfigSourceDynamicDefaultBrokerConfig
			}
		}
		rc.Value, rc.Source = &value, int8(source)
		out[i] = rc
	}
	return out
}

// configResourceError refuses a resource the controller does not manage
// or a topic that does not exist.
func (c *Controller) configResourceError(typ kmsg.ConfigResourceType, name string) *apiError {
	if typ != kmsg.ConfigResourceTypeTopic {
		return errorf(kerr.InvalidRequest, "The controller manages topic configs only, not resource type %v.", typ)
	}
	if _, ok := c.spec.TopicByName(name); !ok {
		return errorf(kerr.UnknownTopicOrPartition, "The topic '%s' does not exist.", name)
	}
	return nil
}

// incrementalAlterConfigs handles IncrementalAlterConfigs for topics: SET,
// DELETE, and APPEND / SUBTRACT on list keys (starting from the default
// when the key is not set). A resource's changes apply all or nothing; all
// resources of the request share one batch. Only changes write records.
func (c *Controller) incrementalAlterConfigs(req *kmsg.IncrementalAlterConfigsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	resp.Resources = alterResources(c, req.Resources, req.ValidateOnly, func(r kmsg.IncrementalAlterConfigsRequestResource) configKey {
		return configKey{r.ResourceType, r.ResourceName}
	}, c.incrementalChanges)
	return resp
}

// alterResources applies the resources of an (Incremental)AlterConfigs
// request, each named by key: duplicates and unknown resources are
// refused, the others' changes validate them and return their records,
// which go into one batch (none for validate_only), each resource's all or
// nothing. It returns the resources' results in order.
func alterResources[R any](c *Controller, resources []R, validateOnly bool, key func(R) configKey, changes func(R) ([]meta.Record, *apiError)) []kmsg.IncrementalAlterConfigsResponseResource {
	dup := duplicates(resources, key)
	var b *batch
	if !validateOnly {
		b = c.openBatch()
	}
	var results []kmsg.IncrementalAlterConfigsResponseResource
	for _, res := range resources {
		k := key(res)
		e := c.alterResource(b, dup[k], k, func() ([]meta.Record, *apiError) { return changes(res) })
		results = append(results, alterConfigsResult(k.typ, k.name, e))
	}
	if b != nil {
		c.seal(b)
	}
	return results
}

// alterResource applies one resource of an (Incremental)AlterConfigs
// request: a duplicate or unknown resource is refused, otherwise changes
// validates and returns the records, which go into b (nil for
// validate_only) all or nothing.
func (c *Controller) alterResource(b *batch, dup bool, key configKey, changes func() ([]meta.Record, *apiError)) *apiError {
	if dup {
		return errorf(kerr.InvalidRequest, "Duplicate resource.")
	}
	if e := c.configResourceError(key.typ, key.name); e != nil {
		return e
	}
	recs, e := changes()
	if e == nil && b != nil && !c.add(b, recs...) {
		e = errorf(kerr.PolicyViolation, "The changes do not fit in one controller batch.")
	}
	return e
}

// configKey identifies a config resource of a request.
type configKey struct {
	typ  kmsg.ConfigResourceType
	name string
}

// incrementalChanges validates one topic's incremental changes and
// returns their records.
func (c *Controller) incrementalChanges(res kmsg.IncrementalAlterConfigsRequestResource) ([]meta.Record, *apiError) {
	resource := topicResource(res.ResourceName)
	seen := map[string]bool{}
	var recs []meta.Record
	for _, cfg := range res.Configs {
		if seen[cfg.Name] {
			return nil, errorf(kerr.InvalidRequest, "Duplicate config key %s.", cfg.Name)
		}
		seen[cfg.Name] = true
		tc, ok := config.TopicRow(cfg.Name)
		if !ok {
			return nil, errorf(kerr.InvalidConfig, "Unknown topic config name: %s", cfg.Name)
		}
		cur, has := c.spec.ConfigValue(resource, cfg.Name)
		var next *string
		switch cfg.Op {
		case kmsg.IncrementalAlterConfigOpSet:
			if _, e := checkTopicConfig(cfg.Name, cfg.Value); e != nil {
				return nil, e
			}
			next = cfg.Value
		case kmsg.IncrementalAlterConfigOpDelete:
		case kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
			if !tc.IsList() {
				return nil, errorf(kerr.InvalidConfig, "Can't %v to key %s because its type is not LIST.", cfg.Op, cfg.Name)
			}
			if cfg.Value == nil {
				return nil, errorf(kerr.InvalidRequest, "Null value not supported for topic config: %s", cfg.Name)
			}
			base := tc.Default
			if has {
				base = cur
			}
			// Loose: a value stored before the table refused empty items
			// ("compact,,delete") keeps its other items.
			items := config.SplitListLoose(base)
			operands, err := config.SplitList(*cfg.Value)
			if err != nil {
				return nil, errorf(kerr.InvalidConfig, "Invalid value %s for configuration %s: %v", *cfg.Value, cfg.Name, err)
			}
			for _, v := range operands {
				if cfg.Op == kmsg.IncrementalAlterConfigOpAppend && !slices.Contains(items, v) {
					items = append(items, v)
				} else if cfg.Op == kmsg.IncrementalAlterConfigOpSubtract {
					items = slices.DeleteFunc(items, func(x string) bool { return x == v })
				}
			}
			joined := strings.Join(items, ",")
			if _, e := checkTopicConfig(cfg.Name, &joined); e != nil {
				return nil, e
			}
			next = &joined
		default:
			return nil, errorf(kerr.InvalidRequest, "Unknown config operation %d for %s.", cfg.Op, cfg.Name)
		}
		if cfg.Name == config.TopicCleanupPolicy {
			value := ""
			if next != nil {
				value = *next
			}
			if e := checkCoordinatorTopicPolicy(res.ResourceName, value, next != nil); e != nil {
				return nil, e
			}
		}
		if (next == nil && has) || (next != nil && (!has || *next != cur)) {
			recs = append(recs, configRecord(res.ResourceName, cfg.Name, next))
		}
	}
	return recs, nil
}

// alterConfigs handles the legacy AlterConfigs for topics: the request's
// keys become the topic's whole config, so keys it does not list are
// deleted.
func (c *Controller) alterConfigs(req *kmsg.AlterConfigsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
	results := alterResources(c, req.Resources, req.ValidateOnly, func(r kmsg.AlterConfigsRequestResource) configKey {
		return configKey{r.ResourceType, r.ResourceName}
	}, c.replacementChanges)
	for _, rr := range results {
		resp.Resources = append(resp.Resources, kmsg.AlterConfigsResponseResource{
			ErrorCode: rr.ErrorCode, ErrorMessage: rr.ErrorMessage, ResourceType: rr.ResourceType, ResourceName: rr.ResourceName,
		})
	}
	return resp
}

// replacementChanges validates one topic's full config and returns the
// records that turn its current config into it.
func (c *Controller) replacementChanges(res kmsg.AlterConfigsRequestResource) ([]meta.Record, *apiError) {
	resource := topicResource(res.ResourceName)
	want := map[string]string{}
	var recs []meta.Record
	for _, cfg := range res.Configs {
		if _, ok := want[cfg.Name]; ok {
			return nil, errorf(kerr.InvalidRequest, "Duplicate config key %s.", cfg.Name)
		}
		if _, e := checkTopicConfig(cfg.Name, cfg.Value); e != nil {
			return nil, e
		}
		want[cfg.Name] = *cfg.Value
		if cur, has := c.spec.ConfigValue(resource, cfg.Name); !has || cur != *cfg.Value {
			recs = append(recs, configRecord(res.ResourceName, cfg.Name, cfg.Value))
		}
	}
	policy, ok := want[config.TopicCleanupPolicy]
	if e := checkCoordinatorTopicPolicy(res.ResourceName, policy, ok); e != nil {
		return nil, e
	}
	for _, e := range c.spec.Configs(resource) {
		if _, keep := want[e.Key]; !keep {
			recs = append(recs, configRecord(res.ResourceName, e.Key, nil))
		}
	}
	return recs, nil
}

// duplicates returns the keys that occur more than once in items.
func duplicates[T any, K comparable](items []T, key func(T) K) map[K]bool {
	seen := make(map[K]bool, len(items))
	dup := map[K]bool{}
	for _, it := range items {
		k := key(it)
		if seen[k] {
			dup[k] = true
		}
		seen[k] = true
	}
	return dup
}
