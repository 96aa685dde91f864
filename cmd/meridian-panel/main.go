// Command meridian-panel is the desktop companion's panel window: a web
// view (WebKitGTK, cgo, build tag webkit) that shows the panel page of one
// gateway and nothing else. meridian-desktop starts it; the session cookie
// arrives on stdin. With --copy it holds stdin's text on the clipboard
// until another program takes it.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/meridian-gw/meridian/internal/panelwindow"
)

func main() {
	origin := flag.String("origin", "http://127.0.0.1:3456", "the gateway's origin: the only one the window loads")
	copyText := flag.Bool("copy", false, "hold stdin's text on the clipboard until another program takes it")
	flag.Parse()
	in := io.LimitReader(os.Stdin, 1<<10)
	var err error
	if *copyText {
		var b []byte
		if b, err = io.ReadAll(in); err == nil {
			err = panelwindow.HoldClipboard(string(b))
		}
	} else {
		cookie, _ := bufio.NewReader(in).ReadString('\n')
		err = panelwindow.Run(panelwindow.Config{Origin: *origin, Cookie: strings.TrimSpace(cookie), Title: "Meridian"})
	}
	if errors.Is(err, panelwindow.ErrNoWebView) {
		os.Exit(panelwindow.ExitNoWebView) // the companion opens the browser instead
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "meridian-panel:", err)
		os.Exit(1)
	}
}
