// Package desktop is the desktop companion: it holds the gateway (owned
// or attached, package keeper), looks at it every few seconds (package
// look), shows the glance on its icon (package tray), tells what
// happened through the desktop's notifications under the notice
// policy, whose cooldowns it keeps in a file across its restarts, and
// does what the menu asks: open the panel or the pages, pause and
// resume serving, switch the default profile, copy a setup command,
// quit (draining a gateway it owns).
package desktop

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/meridian-gw/meridian/internal/clientsetup"
	"github.com/meridian-gw/meridian/internal/glance"
	"github.com/meridian-gw/meridian/internal/keeper"
	"github.com/meridian-gw/meridian/internal/look"
	"github.com/meridian-gw/meridian/internal/notice"
	"github.com/meridian-gw/meridian/internal/tray"
)

// UI is the icon: it shows a glance and the profiles, and reports clicks.
type UI interface {
	Show(glance.Glance)
	SetProfiles(names []string, def string)
	Clicks() <-chan tray.Click
}

// Notifier shows a notification (package dbusnotify on Linux).
type Notifier interface {
	Show(ctx context.Context, title, body string, critical bool) (uint32, error)
}

// Config is one companion.
type Config struct {
	// Keeper is the gateway to hold; its Notify is the companion's.
	Keeper keeper.Config
	// Key is the gateway's admin key ("" for an open gateway).
	Key string
	// StatePath keeps the notification cooldowns.
	StatePath string
	// Off are the notification categories switched off.
	Off []notice.Category
	// Every is how often the gateway is looked at (default 5 s).
	Every time.Duration
	// PanelBin is meridian-panel, the window's own binary (cgo, WebKitGTK):
	// it shows the panel and holds a copied text where no clipboard tool
	// is. Empty: the panel opens in the browser.
	PanelBin string
	// Panel opens the panel window (signed in with cookie); Open opens a
	// page in the browser; Copy puts text on the clipboard. Nil: the
	// panel process of PanelBin, the system's opener, the clipboard tools.
	Panel  func(ctx context.Context, origin, cookie string) error
	Open   func(url string) error
	Copy   func(text string) error
	Notify Notifier
	Log    *slog.Logger
}

// Run runs the companion until ctx ends or the menu's Quit, then closes
// the panel and releases the gateway (draining it if it is the
// companion's own).
func Run(ctx context.Context, cfg Config, ui UI) error {
	log := cmp.Or(cfg.Log, slog.New(slog.DiscardHandler))
	events := make(chan keeper.Event, 16)
	kc := cfg.Keeper
	kc.Notify = func(e keeper.Event) {
		select {
		case events <- e:
		default: // a storm of events: the glance still says it
		}
	}
	kc.Log = log
	k, err := keeper.Start(ctx, kc)
	if err != nil {
		return err
	}
	defer k.Close()
	base := "http://" + kc.Addr
	client := &http.Client{Timeout: 10 * time.Second}
	c := &companion{cfg: cfg, log: log, ui: ui, keeper: k,
		looker:  &look.Looker{URL: base, Key: cfg.Key, Client: client},
		changer: &changer{url: base, key: cfg.Key, client: client},
		policy:  notice.DefaultPolicy()}
	c.policy.Off = map[notice.Category]bool{}
	for _, off := range cfg.Off {
		c.policy.Off[off] = true
	}
	c.state = loadState(cfg.StatePath, log)
	if c.cfg.Panel == nil {
		c.cfg.Panel = PanelProcess(cfg.PanelBin)
	}
	if c.cfg.Open == nil {
		c.cfg.Open = OpenURL
	}
	if c.cfg.Copy == nil {
		clip := &clipboard{holder: cfg.PanelBin}
		defer clip.close()
		c.cfg.Copy = clip.copy
	}
	defer c.windows.close()
	return c.loop(ctx, events)
}

// companion is one running companion's state.
type companion struct {
	cfg     Config
	log     *slog.Logger
	ui      UI
	keeper  *keeper.Keeper
	looker  *look.Looker
	changer *changer
	policy  notice.Policy
	state   *notice.State
	windows windows
	// reached: the last look found the gateway answering; paused: it
	// took no new turns.
	reached, paused bool
}

func (c *companion) loop(ctx context.Context, events <-chan keeper.Event) error {
	every := cmp.Or(c.cfg.Every, 5*time.Second)
	tick := time.NewTicker(every)
	defer tick.Stop()
	due := time.NewTimer(time.Hour)
	defer due.Stop()
	c.look(ctx)
	for {
		c.rearm(due)
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			c.look(ctx)
		case e := <-events:
			if ev, ok := glance.KeeperEvent(e.Kind, e.Detail, e.At); ok {
				c.offer(ctx, ev)
			}
			c.look(ctx)
		case <-due.C:
			c.tell(ctx, c.state.Due(c.policy, time.Now()))
		case click := <-c.ui.Clicks():
			if click.Kind == tray.Quit {
				return nil
			}
			if err := c.do(ctx, click); err != nil {
				c.log.Warn("the menu's action failed", "action", click.Kind, "err", err)
				c.show(ctx, "Meridian: that did not work", err.Error(), false)
			}
		}
	}
}

// rearm sets the timer to the next held burst's end.
func (c *companion) rearm(t *time.Timer) {
	next := c.state.Next(c.policy)
	if next.IsZero() {
		t.Reset(time.Hour)
		return
	}
	t.Reset(max(time.Until(next), 0))
}

// look reads the gateway and shows what it found.
func (c *companion) look(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	r, alerts, err := c.looker.Look(ctx)
	if err != nil {
		c.log.Warn("could not read the gateway", "err", err)
	}
	r.Exhausted = c.keeper.Mode() == keeper.Exhausted
	now := time.Now()
	c.ui.Show(glance.Of(r, now))
	if r.Reached {
		var names []string
		for _, p := range r.Profiles {
			names = append(names, p.Name)
		}
		c.ui.SetProfiles(names, r.Default)
	}
	if c.reached && !r.Reached && c.keeper.Mode() == keeper.Attached {
		c.offer(ctx, glance.GoneEvent(now))
	}
	c.reached, c.paused = r.Reached, r.Draining
	for _, a := range alerts {
		// An alert older than its cooldown was told (or not worth telling)
		// before this companion looked.
		if a.At.After(now.Add(-c.policy.Cooldown)) {
			// A burst is measured by when the companion saw each alert:
			// alerts sent over a second reach it in one or two looks.
			e := glance.AlertEvent(a)
			e.At = now
			c.offer(ctx, e)
		}
	}
}

func (c *companion) offer(ctx context.Context, e notice.Event) {
	c.tell(ctx, c.state.Offer(c.policy, e))
}

// tell shows notes and keeps the cooldowns.
func (c *companion) tell(ctx context.Context, notes []notice.Note) {
	if len(notes) == 0 {
		return
	}
	for _, n := range notes {
		c.show(ctx, n.Title, n.Body, n.Critical)
	}
	c.state.Forget(c.policy, time.Now())
	saveState(c.cfg.StatePath, c.state, c.log)
}

func (c *companion) show(ctx context.Context, title, body string, critical bool) {
	if c.cfg.Notify == nil {
		c.log.Info("notification", "title", title, "body", body)
		return
	}
	if _, err := c.cfg.Notify.Show(ctx, title, body, critical); err != nil {
		c.log.Warn("could not show a notification", "title", title, "err", err)
	}
}

// do is what a menu click asks.
func (c *companion) do(ctx context.Context, click tray.Click) error {
	switch click.Kind {
	case tray.OpenPanel:
		cookie, err := c.changer.sessionCookie(ctx)
		if err != nil {
			return err
		}
		return c.windows.open(ctx, c.cfg.Panel, c.looker.URL, cookie, c.log)
	case tray.OpenPages:
		return c.cfg.Open(c.looker.URL + "/")
	case tray.Pause:
		if err := c.changer.pause(ctx, !c.paused); err != nil {
			return err
		}
		c.look(ctx)
	case tray.Profile:
		if click.Arg == "" {
			return nil
		}
		if err := c.changer.setDefault(ctx, click.Arg); err != nil {
			return err
		}
		c.look(ctx)
	case tray.Copy:
		cmd, err := clientsetup.Command(clientsetup.Choice{Client: click.Arg, Addr: c.cfg.Keeper.Addr})
		if err != nil {
			return err
		}
		if err := c.cfg.Copy(cmd); err != nil {
			return fmt.Errorf("%w; the command is: %s", err, cmd)
		}
		return nil
	}
	return nil
}
