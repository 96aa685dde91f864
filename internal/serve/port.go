package serve

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/meridian-gw/meridian/internal/probe"
)

// portTaken says who holds the port serve could not take: another
// Meridian (its version and pid) or something else.
func portTaken(ctx context.Context, cfg Config, listenErr error) error {
	host := cfg.Host
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	url := "http://" + net.JoinHostPort(host, strconv.Itoa(cfg.Port))
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	r, err := probe.Probe(pctx, url, cfg.APIKey)
	switch {
	case err != nil:
		return fmt.Errorf("%w (and the holder did not answer: %v); choose another --port", listenErr, err)
	case r.Meridian && r.PID > 0:
		return fmt.Errorf("port %d is taken by another Meridian (version %s, pid %d): use it (`meridian status`), stop it, or choose another --port", cfg.Port, r.Version, r.PID)
	case r.Meridian:
		return fmt.Errorf("port %d is taken by another Meridian (version %s): use it (`meridian status`), stop it, or choose another --port", cfg.Port, r.Version)
	}
	return fmt.Errorf("port %d is taken by %s; stop it or choose another --port", cfg.Port, r.Holder)
}
