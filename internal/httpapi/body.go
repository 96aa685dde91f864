package httpapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/meridian-gw/meridian/internal/anthropic"
	"github.com/meridian-gw/meridian/internal/gateway"
)

// DefaultBodyTimeout bounds how long a request body may take to arrive.
// A loopback or LAN client sends the largest accepted body in well under a
// second; one that dribbles holds a connection and a handler for nothing.
const DefaultBodyTimeout = 30 * time.Second

// drainKey carries, in a request's context, a context that ends when the
// listener's drain begins: a mounted server (Antigravity's, under
// --backend combined) never drains itself, so it reads the outer one's.
type drainKey struct{}

// withDrain gives r the gate's drain signal unless an outer server
// already gave it one.
func (g *gate) withDrain(r *http.Request) *http.Request {
	if r.Context().Value(drainKey{}) != nil {
		return r
	}
	return r.WithContext(context.WithValue(r.Context(), drainKey{}, g.draining))
}

func drainOf(r *http.Request) context.Context {
	ctx, _ := r.Context().Value(drainKey{}).(context.Context)
	return ctx
}

// longAgo is a read deadline in the past: it ends a blocked read at once.
var longAgo = time.Unix(1, 0)

// bodies bound the request bodies a server reads: their size
// (--max-body-bytes) and how long they may take to arrive
// (--body-timeout).
type bodies struct {
	max     int64
	timeout time.Duration
}

// read reads a request body up to the configured size, within the body
// timeout. A body still arriving when the drain begins is cut at once:
// its request has started no work, and waiting for it would hold the
// shutdown up for as long as its client likes.
func (b bodies) read(w http.ResponseWriter, r *http.Request) ([]byte, *gateway.Error) {
	return b.readLimit(w, r, b.max)
}

func (b bodies) readLimit(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, *gateway.Error) {
	rc := http.NewResponseController(w)
	deadlines := rc.SetReadDeadline(time.Now().Add(b.timeout)) == nil
	drain := drainOf(r)
	var cut chan struct{}
	var stopCut func() bool
	if drain != nil && deadlines {
		cut = make(chan struct{})
		stopCut = context.AfterFunc(drain, func() {
			defer close(cut)
			_ = rc.SetReadDeadline(longAgo)
		})
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if stopCut != nil && !stopCut() {
		<-cut // the cut ran: the deadline it set is undone below, after it
	}
	if deadlines && err == nil {
		// The rest of the request (a stream's whole life) has no read
		// deadline: the server's watch for a closed connection reads on.
		// After a failed read the connection is closed, deadline and all.
		_ = rc.SetReadDeadline(time.Time{})
	}
	var tooBig *http.MaxBytesError
	switch {
	case err == nil:
		return body, nil
	case errors.As(err, &tooBig):
		return nil, &gateway.Error{Status: http.StatusRequestEntityTooLarge, Type: anthropic.ErrRequestTooLarge,
			Message: fmt.Sprintf("request body exceeds %d bytes (--max-body-bytes)", limit)}
	case cut != nil && drain.Err() != nil && errors.Is(err, os.ErrDeadlineExceeded):
		w.Header().Set("Connection", "close")
		e := gateway.Unavailable("meridian is shutting down: the request body had not arrived when the shutdown began; send it again")
		e.RetryAfter = drainRetry
		return nil, e
	case errors.Is(err, os.ErrDeadlineExceeded):
		w.Header().Set("Connection", "close")
		return nil, &gateway.Error{Status: http.StatusRequestTimeout, Type: anthropic.ErrInvalidRequest,
			Message: fmt.Sprintf("the request body did not arrive within %s (--body-timeout)", b.timeout)}
	}
	return nil, gateway.InvalidRequest("could not read the request body: " + err.Error())
}
