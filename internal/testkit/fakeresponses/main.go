// Command fakeresponses serves a fake OpenAI Responses upstream on its
// own, for trying real clients through meridian's codex backend and the
// real codex CLI by hand (BACKEND=codex scripts/try-clients). It answers
// as testkit.ResponsesClientScript describes, prints its base URL (…/v1)
// and logs one line per request.
package main

import (
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/meridian-gw/meridian/internal/testkit"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "address to listen on")
	flag.Parse()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("http://%s/v1\n", ln.Addr())
	go func() {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
		<-sig
		_ = ln.Close()
	}()
	err = testkit.ServeResponses(ln, func(n int, body map[string]any) testkit.ResponsesReply {
		reply := testkit.ResponsesClientScript(n, body)
		calls := ""
		for _, c := range reply.Calls {
			calls += " " + c.Name
		}
		log.Printf("request %d → %q%s", n, reply.Text, calls)
		return reply
	})
	if err != nil && !errors.Is(err, net.ErrClosed) {
		log.Fatal(err)
	}
}
