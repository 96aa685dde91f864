// Command fakeupstream serves the fake Anthropic upstream on its own, for
// trying real clients through meridian and the real claude CLI by hand
// (scripts/try-clients). It answers as testkit.ClientResponder describes
// and logs one line per request.
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"syscall"

	"github.com/meridian-gw/meridian/internal/testkit"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "address to listen on")
	inputTokens := flag.Int("input-tokens", 0, "input tokens every reply reports (0: the responder's own), to drive a client's context accounting")
	flag.Parse()
	up, err := testkit.StartUpstream(*addr, func(r testkit.Request) testkit.Reply {
		reply := testkit.ClientResponder(r)
		if *inputTokens > 0 {
			reply.Usage.InputTokens = *inputTokens
		}
		tools := ""
		for _, tu := range reply.ToolUses {
			tools += " " + tu.Name
		}
		log.Printf("request: %d messages → %q%s", len(r.Messages()), reply.Text, tools)
		return reply
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(up.URL)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	<-sig
	up.Close()
}
