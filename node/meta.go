package node

import (
	"bytes"
	crand "crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/strata-log/strata/core/config"
)

// MetaPropertiesFile is the file, in the data directory, that ties the
// directory to one cluster and one node, as Kafka's meta.properties does.
const MetaPropertiesFile = "meta.properties"

// metaVersion is Kafka's KRaft meta.properties version: version=1 requires
// node.id and cluster.id.
const metaVersion = 1

// ErrMetaMismatch is wrapped when meta.properties belongs to another node.
var ErrMetaMismatch = errors.New("meta.properties does not match the configuration")

// MetaProperties is what meta.properties records.
type MetaProperties struct {
	ClusterID string
	NodeID    int32
	Version   int
}

// NewClusterID returns a random cluster id in Kafka's form: a version-4
// UUID in unpadded base64url (22 characters). Like Kafka's
// Uuid.randomUuid, it never starts with '-' (which command-line tools
// would read as a flag) and is never the zero UUID.
func NewClusterID(random io.Reader) (string, error) {
	for {
		var u [16]byte
		if _, err := io.ReadFull(random, u[:]); err != nil {
			return "", fmt.Errorf("cluster id: %w", err)
		}
		u[6] = u[6]&0x0f | 0x40 // version 4
		u[8] = u[8]&0x3f | 0x80 // IETF variant
		id := base64.RawURLEncoding.EncodeToString(u[:])
		if !strings.HasPrefix(id, "-") {
			return id, nil
		}
	}
}

// CheckClusterID reports whether id is a cluster id in Kafka's form: 22
// characters of unpadded base64url encoding 16 bytes.
func CheckClusterID(id string) error {
	b, err := base64.RawURLEncoding.DecodeString(id)
	if err != nil || len(b) != 16 || len(id) != 22 {
		return fmt.Errorf("cluster id %q is not 22 characters of base64url (16 bytes) (kafka-storage.sh random-uuid prints one)", id)
	}
	return nil
}

// loadOrCreateMeta reads dir/meta.properties, checking that it was written
// for nodeID (and for clusterID when that is not empty), or, on a first
// start, creates it with clusterID, or a fresh cluster id when that is
// empty. created reports which happened.
func loadOrCreateMeta(dir string, nodeID int32, clusterID string) (meta MetaProperties, created bool, err error) {
	path := filepath.Join(dir, MetaPropertiesFile)
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		id := clusterID
		if id == "" {
			if id, err = NewClusterID(crand.Reader); err != nil {
				return meta, false, err
			}
		}
		meta = MetaProperties{ClusterID: id, NodeID: nodeID, Version: metaVersion}
		if err := writeMeta(dir, meta); err != nil {
			return meta, false, err
		}
		return meta, true, nil
	case err != nil:
		return meta, false, fmt.Errorf("read %s: %w", path, osErr(err))
	}
	meta, err = parseMeta(data)
	if err != nil {
		return meta, false, fmt.Errorf("%s: %w", path, err)
	}
	if meta.NodeID != nodeID {
		return meta, false, fmt.Errorf("%w: %s has node.id=%d but the configuration says node.id=%d; "+
			"this data directory belongs to another node", ErrMetaMismatch, path, meta.NodeID, nodeID)
	}
	if clusterID != "" && meta.ClusterID != clusterID {
		return meta, false, fmt.Errorf("%w: %s has cluster.id=%s but the configuration says %s; "+
			"this data directory belongs to another cluster", ErrMetaMismatch, path, meta.ClusterID, clusterID)
	}
	return meta, false, nil
}

func parseMeta(data []byte) (MetaProperties, error) {
	props, err := config.ParseProperties(bytes.NewReader(data))
	if err != nil {
		return MetaProperties{}, err
	}
	values := make(map[string]string, len(props))
	for _, p := range props {
		values[p.Key] = p.Value
	}
	var meta MetaProperties
	version, err := strconv.Atoi(values["version"])
	if err != nil || version != metaVersion {
		return meta, fmt.Errorf("version=%q: only version %d is supported", values["version"], metaVersion)
	}
	meta.Version = version
	meta.ClusterID = values["cluster.id"]
	if meta.ClusterID == "" {
		return meta, errors.New("cluster.id is missing")
	}
	id, err := strconv.ParseInt(values[KeyNodeID], 10, 32)
	if err != nil || id < 0 {
		return meta, fmt.Errorf("node.id=%q is not a node id", values[KeyNodeID])
	}
	meta.NodeID = int32(id)
	return meta, nil
}

// writeMeta writes meta.properties durably (writeFileDurably), so a
// crash leaves either no file or a complete one.
func writeMeta(dir string, meta MetaProperties) error {
	content := fmt.Sprintf("#\n# Written by strata (storage format or first start). Do not edit: it ties this\n"+
		"# directory to its cluster and node.\n#\ncluster.id=%s\nnode.id=%d\nversion=%d\n",
		meta.ClusterID, meta.NodeID, meta.Version)
	return writeFileDurably(dir, MetaPropertiesFile, []byte(content))
}
