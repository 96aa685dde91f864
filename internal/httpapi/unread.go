package httpapi

import (
	"io"
	"net/http"
	"sync/atomic"
	"time"
)

// boundUnreadBody bounds what an answer given before its request's body
// was read waits for. To keep the connection, net/http reads the rest of
// such a body (a refusal's, a 404's) before it writes the answer, with no
// deadline of its own: a client that declares a body and never sends it
// would hold that answer and its connection for good. The read gets the
// body timeout, after which the answer goes out and the connection
// closes; a client whose body is on its way keeps its connection.
func (s *Server) boundUnreadBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength == 0 || r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		body := &bodyProgress{ReadCloser: r.Body}
		body.left.Store(r.ContentLength)
		r.Body = body
		gw := &unreadGuard{ResponseWriter: w, body: body, timeout: s.cfg.Listen.BodyTimeout}
		next.ServeHTTP(gw, r)
		gw.answering() // an answer of headers alone is written after this
	})
}

// bodyProgress knows whether a request body has been read to its end.
// The forwarding transport may read it while the handler answers.
type bodyProgress struct {
	io.ReadCloser
	left atomic.Int64 // bytes still to come; -1 while unknown (chunked)
	eof  atomic.Bool
}

func (b *bodyProgress) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if left := b.left.Load(); left > 0 {
		b.left.Store(max(left-int64(n), 0))
	}
	if err == io.EOF {
		b.eof.Store(true)
	}
	return n, err
}

func (b *bodyProgress) done() bool { return b.eof.Load() || b.left.Load() == 0 }

// unreadGuard sets the deadline as the answer's header is about to go.
type unreadGuard struct {
	http.ResponseWriter
	body    *bodyProgress
	timeout time.Duration
	started bool
}

func (w *unreadGuard) answering() {
	if w.started {
		return
	}
	w.started = true
	if !w.body.done() {
		_ = http.NewResponseController(w.ResponseWriter).SetReadDeadline(time.Now().Add(w.timeout))
	}
}

func (w *unreadGuard) WriteHeader(code int) {
	if code >= http.StatusOK {
		w.answering()
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *unreadGuard) Write(b []byte) (int, error) {
	w.answering()
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach Flush and deadlines.
func (w *unreadGuard) Unwrap() http.ResponseWriter { return w.ResponseWriter }
