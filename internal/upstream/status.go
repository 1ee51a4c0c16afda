package upstream

import "time"

// State is where a server is in its life cycle.
type State string

const (
	StateNotConnected State = "not-connected" // never used yet
	StateConnecting   State = "connecting"    // an attempt is in flight
	StateConnected    State = "connected"
	// StateBackoff: the last attempt failed or the server died; uses fail
	// fast until Status.RetryAt, then the next use tries again.
	StateBackoff State = "backoff"
	// StateError: the last attempt failed or the server died and the
	// backoff delay is over (the next use tries again), or the server can
	// never start (Status.Err.Kind == Config).
	StateError State = "error"
)

// Status is a server's state at one moment.
type Status struct {
	ServerID string
	Name     string
	State    State
	// Err is the last failure, in StateError and StateBackoff.
	Err *Error
	// RetryAt is when the backoff ends, in StateBackoff.
	RetryAt time.Time
	// PID is the stdio child's process id while connected, else 0.
	PID int
	// Generation is that of the latest snapshot taken, 0 if none.
	Generation uint64
}

// Status reports one server's state. It never connects anything. For an
// unknown id the State is StateError and Err wraps ErrUnknownServer.
func (m *Manager) Status(id string) Status {
	c, err := m.server(id)
	if err != nil {
		return Status{ServerID: id, State: StateError, Err: err.(*Error)}
	}
	return c.status()
}

// Statuses reports every server's state, in config order.
func (m *Manager) Statuses() []Status {
	out := make([]Status, len(m.servers))
	for i, c := range m.servers {
		out[i] = c.status()
	}
	return out
}

func (c *serverConn) status() Status {
	st := Status{ServerID: c.cfg.ID, Name: c.cfg.Name}
	if c.cfgErr != nil {
		st.State, st.Err = StateError, c.cfgErr
		return st
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.snaps.cur != nil {
		st.Generation = c.snaps.cur.Generation
	}
	switch {
	case c.sess != nil:
		st.State = StateConnected
		if c.sess.proc != nil {
			st.PID = c.sess.proc.pid
		}
	case c.attempt != nil:
		st.State = StateConnecting
	case c.lastErr != nil && c.m.opts.Now().Before(c.retryAt):
		st.State, st.Err, st.RetryAt = StateBackoff, c.lastErr, c.retryAt
	case c.lastErr != nil:
		st.State, st.Err = StateError, c.lastErr
	default:
		st.State = StateNotConnected
	}
	return st
}
