package clientsetup

import (
	"fmt"
	"net"
	"slices"
	"strings"
)

// Choice is what a person picked in a setup builder (the panel's, the
// landing page's, the desktop menu's): the command it builds is the one
// they run themselves; no page or menu runs it.
type Choice struct {
	Client string
	// Addr is the gateway's host:port as the person reaches it.
	Addr       string
	SetDefault bool
	// KeyEnv names the variable the client reads a key from.
	KeyEnv string
}

// Command is the `meridian setup` command for a choice; the gateway's
// default address is left out.
func Command(c Choice) (string, error) {
	if !slices.ContainsFunc(Clients(), func(k Client) bool { return k.Name == c.Client }) {
		return "", fmt.Errorf("no client %q: setup knows %s", c.Client, strings.Join(Names(), ", "))
	}
	args := []string{"meridian", "setup", c.Client}
	if host, port, err := net.SplitHostPort(c.Addr); err == nil {
		if host != "127.0.0.1" {
			args = append(args, "--host", host)
		}
		if port != "3456" {
			args = append(args, "--port", port)
		}
	}
	if c.SetDefault {
		args = append(args, "--set-default")
	}
	if c.KeyEnv != "" {
		if strings.ContainsFunc(c.KeyEnv, func(r rune) bool {
			return !(r == '_' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9')
		}) {
			return "", fmt.Errorf("the key's variable %q: letters, digits and _ only", c.KeyEnv)
		}
		args = append(args, "--key-env", c.KeyEnv)
	}
	return strings.Join(args, " "), nil
}

// Names are the clients' names, in help's order.
func Names() []string {
	var out []string
	for _, c := range Clients() {
		out = append(out, c.Name)
	}
	return out
}
