package replay

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/codemode-mcp/codemode/internal/diag"
)

// Handler serves steps over HTTP: POST a Request as JSON, get the Response
// as JSON (200), or {"error": {code, message, hint, path}} with 400 for a
// malformed request (413 when the body is over the limit the caller set
// with http.MaxBytesHandler). `codemode serve --http` mounts it at
// /v1/code/step behind the same token, origin check and body-size limit
// as /mcp.
func Handler(s *Stepper) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			writeError(w, http.StatusMethodNotAllowed, &Error{Code: diag.InvalidRequest, Message: r.Method + " is not supported here",
				Hint: "POST a step request as JSON"})
			return
		}
		var req Request
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				writeError(w, http.StatusRequestEntityTooLarge, &Error{Code: diag.InvalidRequest,
					Message: fmt.Sprintf("the request is larger than %d bytes", tooBig.Limit),
					Hint:    "keep large data out of the conversation: a tool result the script only passes on can be a reference the client resolves"})
				return
			}
			writeError(w, http.StatusBadRequest, &Error{Code: diag.InvalidRequest, Message: "the body is not a step request: " + err.Error(),
				Hint: `send {"messages": [{"role": "code", "id": "c1", "code": "..."}], "tools": [...]}`})
			return
		}
		resp, err := s.Step(r.Context(), req)
		if err != nil {
			var re *Error
			if !errors.As(err, &re) {
				re = &Error{Code: diag.InvalidRequest, Message: err.Error()}
			}
			writeError(w, http.StatusBadRequest, re)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(append(Marshal(resp), '\n'))
	})
}

func writeError(w http.ResponseWriter, status int, e *Error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(Marshal(map[string]any{"error": e}), '\n'))
}
