// Package weblogin relays a CLI's own login to a browser: it runs the
// login (`claude auth login`) in a pseudo-terminal, as the CLI expects a
// person at a terminal, reads from what the CLI prints the URL to open
// and whether it asks for a code, and types the code the page sends. It
// never sees a credential: the CLI writes its own login into the
// profile's config dir. Every login is bounded in time and joined.
package weblogin

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"sync"
	"time"

	"github.com/creack/pty"
)

// States of a login.
const (
	Starting = "starting"  // the CLI runs; no URL yet
	Waiting  = "waiting"   // the URL is known: open it, then send the code if asked
	Checking = "checking"  // the CLI finished; its login is being checked
	Done     = "logged_in" // the profile is logged in
	Failed   = "failed"
)

// View is a login as the page and the JSON show it.
type View struct {
	ID      string `json:"id"`
	Profile string `json:"profile"`
	State   string `json:"state"`
	// URL is where the person signs in; AsksCode says the CLI waits for
	// the code that page shows.
	URL      string `json:"url,omitempty"`
	AsksCode bool   `json:"asks_code"`
	// CodeSent says a code was typed; Error why the login failed.
	CodeSent bool      `json:"code_sent"`
	Error    string    `json:"error,omitempty"`
	Started  time.Time `json:"started"`
}

// Bounds of a login.
const (
	// maxOutput is what is kept of the CLI's output to find the URL in.
	maxOutput = 64 << 10
	// maxCode bounds a code typed in.
	maxCode = 4096
)

// Check says whether the profile is logged in once the CLI is done, and
// why not.
type Check func(ctx context.Context) (loggedIn bool, why string)

type login struct {
	mu     sync.Mutex
	view   View
	out    bytes.Buffer
	tty    *os.File
	cancel context.CancelFunc
	done   chan struct{}
}

// Relay runs the logins under way, at most one per profile.
type Relay struct {
	timeout time.Duration
	mu      sync.Mutex
	logins  map[string]*login // by id
	wg      sync.WaitGroup
}

// New relays logins, each given up after timeout.
func New(timeout time.Duration) *Relay {
	return &Relay{timeout: timeout, logins: map[string]*login{}}
}

// Start runs cmd (the CLI's login for profile) in a pseudo-terminal.
// check runs once the CLI exits. A second login of a profile while one
// runs ends the first.
func (r *Relay) Start(profile string, cmd *exec.Cmd, check Check) (View, error) {
	r.mu.Lock()
	for _, l := range r.logins {
		if l.view.Profile == profile {
			l.cancel()
		}
	}
	r.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), r.timeout)
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 400}) // wide: the URL on one line
	if err != nil {
		cancel()
		return View{}, fmt.Errorf("start the CLI's login: %w", err)
	}
	l := &login{tty: tty, cancel: cancel, done: make(chan struct{}),
		view: View{ID: rand.Text()[:16], Profile: profile, State: Starting, Started: time.Now()}}
	r.mu.Lock()
	r.logins[l.view.ID] = l
	r.mu.Unlock()
	r.wg.Go(func() { r.run(ctx, l, cmd, check) })
	return l.snapshot(), nil
}

// run reads the CLI's output until it exits (or the login is given up),
// then checks the login.
func (r *Relay) run(ctx context.Context, l *login, cmd *exec.Cmd, check Check) {
	defer close(l.done)
	defer l.cancel()
	read := make(chan struct{})
	go func() {
		defer close(read)
		buf := make([]byte, 4096)
		for {
			n, err := l.tty.Read(buf)
			if n > 0 {
				l.saw(buf[:n])
			}
			if err != nil {
				return
			}
		}
	}()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	var err error
	select {
	case err = <-exited:
	case <-ctx.Done():
		_ = cmd.Process.Kill()
		<-exited // joined; its exit status is the kill's
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			err = fmt.Errorf("the login did not finish within %s", r.timeout)
		} else {
			err = errors.New("the login was given up")
		}
	}
	_ = l.tty.Close() // ends the reader
	<-read
	if err != nil {
		l.fail(err)
		return
	}
	l.set(func(v *View) { v.State = Checking })
	cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if ok, why := check(cctx); !ok {
		if why == "" {
			why = "the CLI reports it is not logged in"
		}
		l.fail(fmt.Errorf("the login ended, but the profile is not logged in (%s)", why))
		return
	}
	l.set(func(v *View) { v.State = Done })
}

// ansi matches terminal escapes: colours and OSC 8 hyperlinks.
var ansi = regexp.MustCompile(`\x1b\][^\x07\x1b]*(\x07|\x1b\\)|\x1b\[[0-9;?]*[A-Za-z]`)

// loginURL is the first https URL the CLI prints.
var loginURL = regexp.MustCompile(`https://[^\s"'<>\x1b\x07]+`)

// codePrompt is the CLI asking for the code the sign-in page shows.
var codePrompt = regexp.MustCompile(`(?i)(paste|enter) (the )?(authentication |authorization )?code`)

func (l *login) saw(p []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.out.Len()+len(p) <= maxOutput {
		l.out.Write(p)
	}
	text := ansi.ReplaceAll(l.out.Bytes(), nil)
	if l.view.URL == "" {
		if u := loginURL.Find(text); u != nil {
			l.view.URL, l.view.State = string(u), Waiting
		}
	}
	if !l.view.AsksCode && codePrompt.Match(text) {
		l.view.AsksCode = true
	}
}

func (l *login) set(f func(*View)) {
	l.mu.Lock()
	f(&l.view)
	l.mu.Unlock()
}

func (l *login) fail(err error) { l.set(func(v *View) { v.State, v.Error = Failed, err.Error() }) }

func (l *login) snapshot() View {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.view
}

// Get is a login's state; ok false for an unknown id.
func (r *Relay) Get(id string) (View, bool) {
	r.mu.Lock()
	l := r.logins[id]
	r.mu.Unlock()
	if l == nil {
		return View{}, false
	}
	return l.snapshot(), true
}

// Code types the code the sign-in page showed into the CLI.
func (r *Relay) Code(id, code string) (View, error) {
	r.mu.Lock()
	l := r.logins[id]
	r.mu.Unlock()
	if l == nil {
		return View{}, errors.New("no such login: start it again")
	}
	if code == "" || len(code) > maxCode || bytes.ContainsAny([]byte(code), "\r\n\x00\x03\x04") {
		return l.snapshot(), errors.New("the code is one line of at most 4096 characters")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.view.State != Waiting && l.view.State != Starting {
		return l.view, fmt.Errorf("the login is %s: a code can no longer be sent", l.view.State)
	}
	if _, err := io.WriteString(l.tty, code+"\r"); err != nil {
		return l.view, fmt.Errorf("type the code: %w", err)
	}
	l.view.CodeSent = true
	return l.view, nil
}

// Close gives up every login under way and waits for each CLI to exit.
func (r *Relay) Close() {
	r.mu.Lock()
	for _, l := range r.logins {
		l.cancel()
	}
	r.mu.Unlock()
	r.wg.Wait()
}
