package serve

import (
	"context"
	"encoding/json"
	"net/http"
	"time"
)

// Health endpoints over HTTP, for load balancers and orchestrators; they
// need no token (they say nothing but up or not).
//
//   - GET /healthz: the process is up and serving (always 200).
//   - GET /readyz: ready for traffic: every configured upstream has been
//     attempted once (the first catalog refresh is over, whatever each
//     server's outcome: a broken upstream fails only its own calls) and
//     Options.Ready, the data store, answers. 503 with the reasons
//     otherwise.

type readiness struct {
	Ready bool `json:"ready"`
	// Upstreams is "attempted" once every configured server was tried,
	// else "starting".
	Upstreams string `json:"upstreams"`
	// Store is "ok", the reason it cannot be used, or absent without one.
	Store string `json:"store,omitempty"`
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Write([]byte("ok\n"))
}

// readyTimeout bounds the store check of one /readyz.
const readyTimeout = 5 * time.Second

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	st := readiness{Ready: true, Upstreams: "attempted"}
	select {
	case <-s.warm:
	default:
		st.Ready, st.Upstreams = false, "starting"
	}
	if s.opts.Ready != nil {
		ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
		err := s.opts.Ready(ctx)
		cancel()
		st.Store = "ok"
		if err != nil {
			st.Ready, st.Store = false, s.runner.Redact(err.Error())
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	if !st.Ready {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	json.NewEncoder(w).Encode(st)
}
