package serve

import (
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/meridian-gw/meridian/internal/store/postgres"
)

// checkAdvertise validates --advertise, the URL the other hosts reach this
// one at. Sharing PostgreSQL while listening beyond loopback, it is
// required: the listening address (0.0.0.0, say) does not say which of
// the machine's addresses the others can reach.
func checkAdvertise(advertise, listenHost, storeDSN string) error {
	if advertise == "" {
		if postgres.IsDSN(storeDSN) && !isLoopback(listenHost) {
			return fmt.Errorf("--advertise is required with a PostgreSQL store when listening on %s: give the URL the other hosts reach this one at (http://10.1.2.3:3456)", listenHost)
		}
		return nil
	}
	u, err := url.Parse(advertise)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		strings.Trim(u.Path, "/") != "" || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("--advertise %q: want the URL the other hosts reach this one at, such as http://10.1.2.3:3456", advertise)
	}
	return nil
}

// advertised is the address this host gives the others: --advertise, or
// where it listens.
func advertised(advertise string, addr net.Addr) string {
	if advertise != "" {
		return strings.TrimSuffix(advertise, "/")
	}
	return selfURL(addr)
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
