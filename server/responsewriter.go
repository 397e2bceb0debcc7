package server

import "net/http"

// responseRecorder notes the status and size of a response for the access
// log and metrics. Handlers that need Flush and friends reach the underlying
// writer through http.NewResponseController, which follows Unwrap.
type responseRecorder struct {
	http.ResponseWriter
	status int // final status written, 0 while the response has not started
	bytes  int64
}

func (w *responseRecorder) WriteHeader(code int) {
	if w.status == 0 && code >= 200 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *responseRecorder) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += int64(n)
	return n, err
}

func (w *responseRecorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// tooLargeWriter replaces the handler's response with a 413 when the handler
// starts answering after its request body ran into the size limit, or with
// a 503 when the body ran past the bytes in flight.
type tooLargeWriter struct {
	http.ResponseWriter
	body     *limitedBody
	limit    int64
	decided  bool
	replaced bool
}

// decide runs once, when the response starts or the handler returns.
func (w *tooLargeWriter) decide() {
	if w.decided {
		return
	}
	w.decided = true
	tooLarge, overBudget := w.body.exceeded.Load(), w.body.overBudget.Load()
	if !tooLarge && !overBudget {
		return
	}
	w.replaced = true
	h := w.ResponseWriter.Header()
	for k := range h {
		if k != RequestIDHeader {
			delete(h, k)
		}
	}
	if tooLarge {
		writeTooLarge(w.ResponseWriter, w.limit)
		return
	}
	writeBusy(w.ResponseWriter, w.body.budget.limit)
}

func (w *tooLargeWriter) WriteHeader(code int) {
	if code < 200 {
		// Informational responses do not start the final response.
		w.ResponseWriter.WriteHeader(code)
		return
	}
	w.decide()
	if !w.replaced {
		w.ResponseWriter.WriteHeader(code)
	}
}

func (w *tooLargeWriter) Write(b []byte) (int, error) {
	w.decide()
	if w.replaced {
		// The handler's answer is discarded; the client gets the 413.
		return len(b), nil
	}
	return w.ResponseWriter.Write(b)
}

func (w *tooLargeWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
