package forward

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// PeerError is another host's refusal of a request this host sent it:
// its status and the message it gave.
type PeerError struct {
	Host    string
	Status  int
	Message string
}

func (e *PeerError) Error() string {
	return fmt.Sprintf("host %s: %s", e.Host, e.Message)
}

// maxPeerAnswer bounds what is read of another host's answer to a
// request of the admin API.
const maxPeerAnswer = 1 << 20

// Ask sends one request of the admin API to the host (its id and the
// address it advertised) as this host of the cluster, and decodes its
// JSON answer into out (nil: ignored). The other host answers it as it
// answers its own admin: the cluster key is the trust between hosts.
func (s *Forwarder) Ask(ctx context.Context, host, addr, method, path string, body, out any) error {
	if s.Key == "" {
		return fmt.Errorf("host %s is reached only with a cluster key (--cluster-key on every host)", host)
	}
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("ask host %s: %w", host, err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(addr, "/")+path, rd)
	if err != nil {
		return fmt.Errorf("ask host %s: %w", host, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set(HeaderClusterKey, s.Key)
	req.Header.Set(HeaderForwardedBy, s.Host)
	req.Header.Set(HeaderClientScope, "admin")
	resp, err := s.client.Do(req)
	if err != nil {
		return fmt.Errorf("could not reach host %s: %w", host, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxPeerAnswer))
	if err != nil {
		return fmt.Errorf("host %s: its answer was cut: %w", host, err)
	}
	if resp.StatusCode >= 300 {
		var e struct {
			Error struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		msg := http.StatusText(resp.StatusCode)
		if json.Unmarshal(raw, &e) == nil && e.Error.Message != "" {
			msg = e.Error.Message
		}
		return &PeerError{Host: host, Status: resp.StatusCode, Message: msg}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("host %s: its answer: %w", host, err)
	}
	return nil
}
