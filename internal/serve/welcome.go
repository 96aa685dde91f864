package serve

import (
	"fmt"
	"io"
	"strings"

	"github.com/meridian-gw/meridian/internal/clientsetup"
)

// welcome tells a person who started meridian in a terminal where it
// listens and what to do next; the log lines follow it.
func welcome(w io.Writer, addr, backend string) {
	var names []string
	for _, c := range clientsetup.Clients() {
		names = append(names, c.Name)
	}
	url := "http://" + addr
	fmt.Fprintf(w, "\nMeridian is serving the Anthropic and OpenAI APIs at %s (backend: %s).\n", url, backend)
	fmt.Fprintf(w, "  See what it does:    open %s/ in a browser\n", url)
	fmt.Fprintf(w, "  Point a client here: meridian setup CLIENT  (%s)\n", strings.Join(names, ", "))
	fmt.Fprintf(w, "  Stop it:             Ctrl-C (running requests finish first)\n\n")
}
