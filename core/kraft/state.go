package kraft

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"strings"

	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/core/quorum"
)

// The quorum-state file holds the Raft's durable election state:
//
//	version byte (1) | epoch int32 | votedFor int32 | leaderID int32 | crc32c uint32
//
// It is replaced atomically: written to quorum-state.tmp, synced, renamed
// over quorum-state, and the directory synced.
const (
	stateFile      = "quorum-state"
	stateTempFile  = "quorum-state.tmp"
	stateVersion   = 1
	stateFileBytes = 1 + 4 + 4 + 4 + 4
)

func encodeState(s quorum.QuorumState) []byte {
	b := make([]byte, 0, stateFileBytes)
	b = append(b, stateVersion)
	b = binary.BigEndian.AppendUint32(b, uint32(s.Epoch))
	b = binary.BigEndian.AppendUint32(b, uint32(int32(s.VotedFor)))
	b = binary.BigEndian.AppendUint32(b, uint32(int32(s.LeaderID)))
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

func decodeState(b []byte) (quorum.QuorumState, bool) {
	if len(b) != stateFileBytes || b[0] != stateVersion ||
		crc32.Checksum(b[:stateFileBytes-4], castagnoli) != binary.BigEndian.Uint32(b[stateFileBytes-4:]) {
		return quorum.QuorumState{}, false
	}
	return quorum.QuorumState{
		Epoch:    int32(binary.BigEndian.Uint32(b[1:5])),
		VotedFor: quorum.NodeID(int32(binary.BigEndian.Uint32(b[5:9]))),
		LeaderID: quorum.NodeID(int32(binary.BigEndian.Uint32(b[9:13]))),
	}, true
}

// loadState reads the durable quorum state, InitialState when the file
// does not exist. A file that exists but stays unreadable is an error: a
// voter that forgot its vote could vote twice in an epoch.
func loadState(disk env.Disk) (quorum.QuorumState, error) {
	f, err := disk.Open(stateFile, false)
	if errors.Is(err, env.ErrNotExist) {
		return quorum.InitialState(), nil
	}
	if err != nil {
		return quorum.QuorumState{}, fmt.Errorf("kraft: open %s: %w", stateFile, err)
	}
	defer func() { _ = f.Close() }()
	buf := make([]byte, stateFileBytes)
	for try := 0; try < readRetries; try++ {
		n, err := f.ReadAt(buf, 0)
		if n == stateFileBytes || err == nil {
			if s, ok := decodeState(buf); ok && f.Size() == stateFileBytes {
				return s, nil
			}
		}
	}
	return quorum.QuorumState{}, fmt.Errorf("kraft: %s is corrupt (%d bytes)", stateFile, f.Size())
}

// ErrUnusableState is Start's error for a quorum-state file that decodes
// but cannot be resumed (quorum.CheckState): an epoch past
// quorum.MaxEpoch, which a Strata before issue 22 persisted from a forged
// Vote, or a vote or leader that is not a configured voter. The member
// refuses to start rather than vote from it; docs/operations.md
// ("An unusable quorum-state") says what the operator does.
var ErrUnusableState = errors.New("kraft: unusable quorum-state")

// unusableState is the one error an operator sees for an unusable
// quorum-state: what is wrong, where, and what to do.
func unusableState(err error, logEnd quorum.OffsetAndEpoch) error {
	what := strings.TrimPrefix(err.Error(), quorum.ErrUnusableState.Error()+": ")
	return fmt.Errorf("%w: <log.dirs>/__cluster_metadata-0/%s holds %s; "+
		"this member's metadata log ends at offset %d in epoch %d (log_end=%d@%d). "+
		"To recover: stop every controller; take N = 1 + the largest epoch any voter's metadata log ends in or its usable quorum-state holds "+
		"(this error shows it for a member that refuses to start, the log line 'recovered state=epoch=E ... log_end=OFFSET@EPOCH' for one that starts); "+
		"on every member that refuses to start run 'strata quorum reset-state --dir <log.dirs>/__cluster_metadata-0 --epoch N'; "+
		"start them again (docs/operations.md, \"An unusable quorum-state\")",
		ErrUnusableState, stateFile, what, logEnd.Offset, logEnd.Epoch, logEnd.Offset, logEnd.Epoch)
}

// StateFileName is the name of the quorum-state file in the metadata log
// directory.
const StateFileName = stateFile

// EncodeStateFile is the content of a quorum-state file holding s, for
// tools that write one offline (strata quorum reset-state).
func EncodeStateFile(s quorum.QuorumState) []byte { return encodeState(s) }

// DecodeStateFile reads a quorum-state file's content; ok is false when it
// is not one (wrong size, version or checksum).
func DecodeStateFile(b []byte) (s quorum.QuorumState, ok bool) { return decodeState(b) }

// statePersister writes quorum states one at a time; a request made while
// one is in flight replaces any waiting one (a later state covers the
// earlier sequence numbers).
type statePersister struct {
	disk     env.Disk
	inflight bool
	waiting  *quorum.PersistRequest
	// done reports a durable request, or an error that must stop the
	// member.
	done func(seq uint64, err error)
}

func (p *statePersister) persist(req quorum.PersistRequest) {
	p.waiting = &req
	if !p.inflight {
		p.next()
	}
}

func (p *statePersister) next() {
	if p.waiting == nil {
		return
	}
	req := *p.waiting
	p.waiting = nil
	p.inflight = true
	fail := func(what string, err error) {
		p.inflight = false
		p.done(req.Seq, fmt.Errorf("kraft: persist quorum state: %s: %w", what, err))
	}
	f, err := p.disk.Open(stateTempFile, true)
	if err != nil {
		fail("open", err)
		return
	}
	if err := f.Truncate(0); err != nil {
		_ = f.Close()
		fail("truncate", err)
		return
	}
	if err := f.WriteAt(encodeState(req.State), 0); err != nil {
		_ = f.Close()
		fail("write", err)
		return
	}
	f.Sync(func(err error) {
		_ = f.Close()
		if err != nil {
			fail("sync", err)
			return
		}
		if err := p.disk.Rename(stateTempFile, stateFile); err != nil {
			fail("rename", err)
			return
		}
		p.disk.SyncDir(".", func(err error) {
			if err != nil {
				fail("sync dir", err)
				return
			}
			p.inflight = false
			p.done(req.Seq, nil)
			p.next()
		})
	})
}
