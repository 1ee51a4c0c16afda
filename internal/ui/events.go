package ui

import (
	"fmt"
	"net/http"
	"strings"
	"time"
)

// events streams the runs recorded after the page was shown, as
// server-sent events ("run", its data the run list's row), for the run
// list's filter. It polls the store every Options.PollEvery (other
// processes may write runs), and at once when Options.Wake says runs were
// written. `shown` is the newest run the page shows: runs listed before
// it are new.
func (u *UI) events(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming is not supported here", http.StatusInternalServerError)
		return
	}
	f, _, err := filterOf(r.URL.Query())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	f.Before, f.Limit = "", 50
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, "retry: 2000\n\n")
	fl.Flush()

	var wake <-chan struct{}
	if u.opts.Wake != nil {
		ch, stop := u.opts.Wake()
		defer stop()
		wake = ch
	}
	ticker := time.NewTicker(u.opts.PollEvery)
	defer ticker.Stop()
	seen := map[string]bool{}
	shown := r.URL.Query().Get("shown")
	first := true
	for {
		rows, _, err := u.opts.History.List(r.Context(), f)
		if err != nil {
			if r.Context().Err() != nil {
				return
			}
			u.log.Warn("ui: live updates cannot read the history", "err", err)
		}
		// rows are newest first: send the new ones oldest first. At first,
		// the new ones are those listed before the newest the page shows
		// (all of them if it showed none; none if it is no longer listed).
		next := map[string]bool{}
		var fresh []int
		shownAt := -1
		for i, rec := range rows {
			next[rec.ID] = true
			if rec.ID == shown {
				shownAt = i
			}
			if !first && !seen[rec.ID] {
				fresh = append(fresh, i)
			}
		}
		if first {
			n := shownAt
			if shown == "" {
				n = len(rows)
			}
			for i := 0; i < n; i++ {
				fresh = append(fresh, i)
			}
		}
		for j := len(fresh) - 1; j >= 0; j-- {
			rec := rows[fresh[j]]
			var b strings.Builder
			if err := u.tpl["runs"].ExecuteTemplate(&b, "row", rowOf(rec)); err != nil {
				u.log.Error("ui: rendering a row", "err", err)
				continue
			}
			fmt.Fprintf(w, "event: run\nid: %s\n", rec.ID)
			for _, line := range strings.Split(b.String(), "\n") {
				fmt.Fprintf(w, "data: %s\n", line)
			}
			fmt.Fprint(w, "\n")
		}
		if len(fresh) > 0 || first {
			fl.Flush()
		}
		seen, first = next, false
		select {
		case <-r.Context().Done():
			return
		case <-ticker.C:
		case <-wake:
		}
	}
}
