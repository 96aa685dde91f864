// Command hookprog is a request hook for the tests, built as a WASI
// module (testkit.HookModule): what it does is its first argument.
package main

import (
	"encoding/json"
	"io"
	"os"
	"strconv"
	"strings"
)

func main() {
	in, err := io.ReadAll(os.Stdin)
	if err != nil {
		os.Exit(2)
	}
	var env struct {
		Headers map[string]string `json:"headers"`
		Body    map[string]any    `json:"body"`
	}
	if err := json.Unmarshal(in, &env); err != nil {
		os.Stderr.WriteString("not an envelope: " + err.Error())
		os.Exit(2)
	}
	args := os.Args[1:]
	switch args[0] {
	case "tag": // adds a header, and a note to the body
		env.Headers[args[1]] = args[2]
		if env.Body != nil {
			env.Body["metadata"] = map[string]any{"user_id": "tagged-by-wasm"}
		}
		out, _ := json.Marshal(env)
		os.Stdout.Write(out)
	case "spin":
		for n := 0; ; n++ {
			if n < 0 {
				break
			}
		}
	case "big":
		n, _ := strconv.Atoi(args[1])
		os.Stdout.WriteString(`{"headers":{"x-pad":"` + strings.Repeat("p", n) + `"}}`)
	case "fail":
		os.Stderr.WriteString("failing on purpose")
		os.Exit(3)
	case "refuse":
		os.Stdout.WriteString(`{"error":{"status":403,"message":"not on Sundays"}}`)
	}
}
