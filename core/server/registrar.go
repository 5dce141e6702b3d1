package server

import (
	"encoding/binary"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/core/kraft"
	"github.com/strata-log/strata/core/meta"
	"github.com/strata-log/strata/core/metrics"
)

// brokerHeartbeatInterval is how often the broker heartbeats to the
// controller (Kafka's broker.heartbeat.interval.ms default).
const brokerHeartbeatInterval = 2 * time.Second

// registrar registers the broker with the active controller through the
// local quorum member, then heartbeats so that it is unfenced and can be
// given replicas. It runs on the loop.
type registrar struct {
	e         env.Env
	m         *kraft.Member
	nodeID    int32
	clusterID string
	// endpoints are the broker's listeners, registered as they are.
	endpoints   []meta.Endpoint
	incarnation [16]byte
	epoch       int64 // -1 until registered
	// previous is the broker epoch of this broker's latest registration
	// that its data directory remembers (brokerEpochFile), -1 if none:
	// BrokerRegistration's PreviousBrokerEpoch (KIP-966).
	previous int64
	// sentPrevious is the PreviousBrokerEpoch of the latest registration
	// request (what the controller was told).
	sentPrevious int64
	timer        env.Timer
	stopped      bool
	// waitingLogged is set once DUPLICATE_BROKER_REGISTRATION was logged.
	waitingLogged bool
	// registrations counts successful registrations (nil: metrics off).
	registrations *metrics.Counter
	// onChange, if set, runs when the broker epoch changes.
	onChange func()
}

// start registers, then heartbeats. forget registers as a broker whose
// data directory lost records it had acknowledged (the start-up scrub
// found damage, replica.Manager.Scrub): PreviousBrokerEpoch -1, as for a
// replaced disk, whatever brokerEpochFile says.
func (r *registrar) start(forget bool) {
	r.epoch = -1
	r.previous = readBrokerEpoch(r.e.Disk())
	if forget && r.previous >= 0 {
		r.e.Logger().Warn("partition logs were damaged: registering as a broker whose disk was replaced (PreviousBrokerEpoch -1), so that the controller no longer counts this broker as holding every committed record",
			"broker_epoch_file", r.previous)
		r.previous = -1
	}
	binary.LittleEndian.PutUint64(r.incarnation[:8], r.e.Rand().Uint64())
	binary.LittleEndian.PutUint64(r.incarnation[8:], r.e.Rand().Uint64())
	r.tick()
}

func (r *registrar) changed() {
	if r.onChange != nil {
		r.onChange()
	}
}

func (r *registrar) stop() {
	r.stopped = true
	if r.timer != nil {
		r.timer.Stop()
	}
}

func (r *registrar) schedule(d time.Duration) {
	if r.stopped {
		return
	}
	r.timer = r.e.AfterFunc(d, r.tick)
}

func (r *registrar) tick() {
	if r.stopped {
		return
	}
	if r.epoch < 0 {
		r.register()
	} else {
		r.heartbeat()
	}
}

func (r *registrar) register() {
	req := kmsg.NewPtrBrokerRegistrationRequest()
	req.Version = 3
	req.BrokerID = r.nodeID
	req.ClusterID = r.clusterID
	req.IncarnationID = r.incarnation
	req.PreviousBrokerEpoch = r.previous
	r.sentPrevious = r.previous
	for _, ep := range r.endpoints {
		l := kmsg.NewBrokerRegistrationRequestListener()
		l.Name, l.Host, l.Port, l.SecurityProtocol = ep.Name, ep.Host, ep.Port, int16(ep.SecurityProtocol)
		req.Listeners = append(req.Listeners, l)
	}
	r.m.Submit(req, func(resp kmsg.Response, err error) {
		if r.stopped {
			return
		}
		rr, ok := resp.(*kmsg.BrokerRegistrationResponse)
		if err != nil || !ok || rr.ErrorCode != 0 {
			code := int16(-1)
			if ok {
				code = rr.ErrorCode
			}
			switch {
			case code == kerr.NotController.Code:
				// No active controller yet (election in progress).
			case code == kerr.DuplicateBrokerRegistration.Code:
				// The previous incarnation's session has not expired
				// yet (a restart); the controller fences it after
				// its session timeout, as in Kafka.
				if !r.waitingLogged {
					r.waitingLogged = true
					r.e.Logger().Info("waiting for the previous broker registration's session to expire")
				}
			default:
				r.e.Logger().Warn("broker registration failed; retrying", "err", err, "error_code", code)
			}
			r.schedule(250 * time.Millisecond)
			return
		}
		r.epoch, r.previous = rr.BrokerEpoch, rr.BrokerEpoch
		writeBrokerEpoch(r.e, r.epoch)
		r.registrations.Inc()
		r.e.Logger().Info("broker registered with the controller", "broker_epoch", r.epoch)
		r.changed()
		r.heartbeat()
	})
}

func (r *registrar) heartbeat() {
	req := kmsg.NewPtrBrokerHeartbeatRequest()
	req.Version = 1
	req.BrokerID, req.BrokerEpoch = r.nodeID, r.epoch
	req.CurrentMetadataOffset = r.m.Image().Position().Offset
	r.m.Submit(req, func(resp kmsg.Response, err error) {
		if r.stopped {
			return
		}
		hr, ok := resp.(*kmsg.BrokerHeartbeatResponse)
		switch {
		case err != nil || !ok:
			r.e.Logger().Warn("broker heartbeat failed", "err", err)
			r.schedule(brokerHeartbeatInterval)
		case hr.ErrorCode == kerr.StaleBrokerEpoch.Code || hr.ErrorCode == kerr.BrokerIDNotRegistered.Code:
			r.epoch = -1
			r.changed()
			r.schedule(250 * time.Millisecond)
		case hr.ErrorCode == 0 && hr.IsFenced:
			// Not caught up yet: heartbeat again soon.
			r.schedule(100 * time.Millisecond)
		default:
			r.schedule(brokerHeartbeatInterval)
		}
	})
}

// Bounds of a controlled shutdown: how long the broker waits for the
// controller to move its leaderships away (Kafka's
// controlled.shutdown.max.retries times retry.backoff, roughly), and how
// often it asks meanwhile.
const (
	controlledShutdownTimeout = 10 * time.Second
	controlledShutdownPoll    = 100 * time.Millisecond
)

// shutdown stops the regular heartbeats and runs a controlled shutdown,
// as Kafka's broker does: it heartbeats with WantShutdown while it goes on
// serving, the controller moves every leadership and ISR membership of
// this broker to others (and fences it once none is left and the other
// brokers have caught up with those changes), and answers ShouldShutdown;
// then done runs, on the loop, and the broker stops. Producers see their
// partitions' leaders move (NOT_LEADER_OR_FOLLOWER, then the new leader)
// rather than a dead connection, and the next incarnation registers at
// once. After controlledShutdownTimeout it asks to be fenced at once
// (WantFence) and stops anyway.
func (r *registrar) shutdown(done func()) {
	r.stop()
	if r.epoch < 0 {
		done()
		return
	}
	finished := false
	finish := func() {
		if !finished {
			finished = true
			done()
		}
	}
	deadline := r.e.Monotonic() + controlledShutdownTimeout
	var ask func()
	ask = func() {
		if finished {
			return
		}
		force := r.e.Monotonic() >= deadline
		req := kmsg.NewPtrBrokerHeartbeatRequest()
		req.Version = 1
		req.BrokerID, req.BrokerEpoch = r.nodeID, r.epoch
		req.CurrentMetadataOffset = r.m.Image().Position().Offset
		req.WantShutdown, req.WantFence = true, force
		r.m.Submit(req, func(resp kmsg.Response, err error) {
			if hr, ok := resp.(*kmsg.BrokerHeartbeatResponse); force || err == nil && ok && hr.ErrorCode == 0 && hr.ShouldShutdown {
				finish()
				return
			}
			r.e.AfterFunc(controlledShutdownPoll, ask)
		})
	}
	// The last ask may go unanswered (no controller): stop regardless.
	r.e.AfterFunc(controlledShutdownTimeout+time.Second, finish)
	ask()
}

// brokerEpochFile, in the data directory, holds the broker epoch of the
// broker's latest registration. It lives with the partitions' data: a
// broker whose directory lost it (a replaced disk, a wiped directory)
// registers with PreviousBrokerEpoch -1, and the controller takes it out
// of every eligible leader replica set (see controller.forgetReplicas).
// An epoch older than the registered one (a power loss before the latest
// write reached the disk) still proves the same directory, whose fsynced
// data is intact.
const brokerEpochFile = "broker-epoch"

// readBrokerEpoch returns the epoch brokerEpochFile holds, -1 if it is
// missing or unreadable.
func readBrokerEpoch(d env.Disk) int64 {
	f, err := d.Open(brokerEpochFile, false)
	if err != nil {
		return -1
	}
	defer f.Close()
	buf := make([]byte, 32)
	n, _ := f.ReadAt(buf, 0)
	v, err := strconv.ParseInt(strings.TrimSpace(string(buf[:n])), 10, 64)
	if err != nil || v < 0 {
		return -1
	}
	return v
}

// writeBrokerEpoch replaces brokerEpochFile with epoch: a temporary file,
// synced, renamed into place and the directory synced, so that a crash
// leaves the old epoch or the new one, never a torn one. A failure is logged: the file only
// spares the broker its eligible-leader places across a restart.
func writeBrokerEpoch(e env.Env, epoch int64) {
	d := e.Disk()
	tmp := brokerEpochFile + ".tmp"
	f, err := d.Open(tmp, true)
	if err == nil {
		if err = f.Truncate(0); err == nil {
			err = f.WriteAt([]byte(strconv.FormatInt(epoch, 10)+"\n"), 0)
		}
		if err != nil {
			_ = f.Close()
		}
	}
	if err != nil {
		e.Logger().Warn("cannot note the broker epoch", "file", tmp, "err", err)
		return
	}
	f.Sync(func(err error) {
		if err == nil {
			err = d.Rename(tmp, brokerEpochFile)
		}
		if err != nil {
			e.Logger().Warn("cannot note the broker epoch", "file", brokerEpochFile, "err", err)
			return
		}
		d.SyncDir("", func(err error) {
			if err != nil {
				e.Logger().Warn("cannot note the broker epoch", "file", brokerEpochFile, "err", err)
			}
		})
	})
	_ = f.Close()
}
