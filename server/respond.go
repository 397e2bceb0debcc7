package server

import (
	"encoding/json"
	"net/http"
)

// errorBody is the JSON shape of errors the server itself answers with. It
// matches the Iceberg REST ErrorModel ({"error": {"message", "type", "code"}})
// so Iceberg clients can read limits and panics like any other API error.
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Message string `json:"message"`
	Type    string `json:"type"`
	Code    int    `json:"code"`
}

// writeJSON writes v as the whole response body with the given status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		// Only server-built values are written here; they always marshal.
		status, b = http.StatusInternalServerError, []byte(`{"error":{"message":"encoding response","type":"InternalServerError","code":500}}`)
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

func writeError(w http.ResponseWriter, status int, typ, message string) {
	writeJSON(w, status, errorBody{Error: errorDetail{Message: message, Type: typ, Code: status}})
}

// unauthenticated answers an unmatched request without valid credentials
// as the Iceberg API answers its own: the same message whatever was wrong.
func (s *Server) unauthenticated(w http.ResponseWriter, r *http.Request, err error) {
	s.logger.DebugContext(r.Context(), "unmatched request not authenticated",
		"method", r.Method, "path", r.URL.EscapedPath(), "error", err, "request_id", RequestID(r.Context()))
	writeError(w, http.StatusUnauthorized, "NotAuthorizedException", "Not authorized: missing or invalid bearer token")
}
