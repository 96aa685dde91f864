// Package tray is the desktop companion's icon: a StatusNotifierItem on
// Linux desktops (over D-Bus, pure Go) and the status bar on macOS,
// through fyne.io/systray. It shows a glance (the icon's colour and its
// tooltip) and reports what was clicked in its menu; what a click does
// is the companion's.
package tray

import (
	"fmt"
	"slices"
	"sync"

	"fyne.io/systray"

	"github.com/meridian-gw/meridian/internal/glance"
)

// Kinds of clicks.
const (
	OpenPanel = "open-panel"
	OpenPages = "open-pages"
	Pause     = "pause"   // pause or resume, whichever the item says
	Profile   = "profile" // Arg: the profile made the default
	Copy      = "copy"    // Arg: the client whose setup command to copy
	Quit      = "quit"
)

// Click is one menu item chosen.
type Click struct{ Kind, Arg string }

// maxProfiles bounds the profiles the menu lists; the console has all.
const maxProfiles = 8

// Tray is the icon and its menu.
type Tray struct {
	clicks   chan Click
	icons    map[glance.Level][]byte
	pause    *systray.MenuItem
	profiles []*systray.MenuItem

	mu    sync.Mutex
	names []string // the profile each item stands for
	level glance.Level
}

// Run shows the icon until Quit and calls ready with it once it is up:
// ready runs the companion and returns when it ends, which ends Run. It
// blocks: call it from the main goroutine (macOS needs its thread).
func Run(title string, clients [][2]string, ready func(*Tray)) {
	systray.Run(func() {
		t := build(title, clients)
		go func() {
			ready(t)
			systray.Quit()
		}()
	}, func() {})
}

func build(title string, clients [][2]string) *Tray {
	t := &Tray{clicks: make(chan Click, 8), icons: drawIcons(), level: glance.Down}
	systray.SetTitle(title)
	systray.SetIcon(t.icons[glance.Down])
	systray.SetTooltip(title)
	forward := func(item *systray.MenuItem, c func() Click) {
		go func() {
			for range item.ClickedCh {
				t.clicks <- c()
			}
		}()
	}
	fixed := func(kind, arg string) func() Click { return func() Click { return Click{kind, arg} } }
	forward(systray.AddMenuItem("Open the panel", "plan windows, conversations, errors"), fixed(OpenPanel, ""))
	forward(systray.AddMenuItem("Open the pages", "Meridian's pages in the browser"), fixed(OpenPages, ""))
	t.pause = systray.AddMenuItem("Pause serving", "finish running turns, take no new ones")
	forward(t.pause, fixed(Pause, ""))
	def := systray.AddMenuItem("Default profile", "the profile requests use unless they name one")
	for i := range maxProfiles {
		item := def.AddSubMenuItemCheckbox("", "", false)
		item.Hide()
		t.profiles = append(t.profiles, item)
		forward(item, func() Click {
			t.mu.Lock()
			defer t.mu.Unlock()
			if i < len(t.names) {
				return Click{Profile, t.names[i]}
			}
			return Click{}
		})
	}
	setup := systray.AddMenuItem("Copy a setup command", "the meridian setup command for a client, to run yourself")
	for _, c := range clients {
		forward(setup.AddSubMenuItem(c[1], "copies: meridian setup "+c[0]), fixed(Copy, c[0]))
	}
	systray.AddSeparator()
	forward(systray.AddMenuItem("Quit", "quit the companion (and the gateway it started)"), fixed(Quit, ""))
	return t
}

// Clicks are the menu's clicks.
func (t *Tray) Clicks() <-chan Click { return t.clicks }

// Show sets the icon and tooltip to a glance.
func (t *Tray) Show(g glance.Glance) {
	t.mu.Lock()
	changed := g.Level != t.level
	t.level = g.Level
	t.mu.Unlock()
	if changed {
		systray.SetIcon(t.icons[g.Level])
		if g.Level == glance.Paused {
			t.pause.SetTitle("Resume serving")
		} else {
			t.pause.SetTitle("Pause serving")
		}
	}
	systray.SetTooltip(g.Tooltip)
}

// SetProfiles lists the profiles, the default checked.
func (t *Tray) SetProfiles(names []string, def string) {
	t.mu.Lock()
	same := slices.Equal(names, t.names)
	t.names = slices.Clone(names)
	t.mu.Unlock()
	for i, item := range t.profiles {
		switch {
		case i >= len(names):
			item.Hide()
			continue
		case !same:
			item.SetTitle(names[i])
			item.SetTooltip(fmt.Sprintf("make %s the default profile", names[i]))
			item.Show()
		}
		if names[i] == def {
			item.Check()
		} else {
			item.Uncheck()
		}
	}
}
