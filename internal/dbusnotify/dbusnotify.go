// Package dbusnotify shows desktop notifications through the
// freedesktop Notifications service on the session bus (dunst, the
// desktops' own daemons): a summary, a body, and the urgency a critical
// one needs to stay until it is dismissed.
package dbusnotify

import (
	"context"
	"fmt"

	"github.com/godbus/dbus/v5"
)

// The service's names on the bus.
const (
	service = "org.freedesktop.Notifications"
	path    = "/org/freedesktop/Notifications"
	notify  = service + ".Notify"
)

// Urgencies of the notification spec.
const (
	urgencyNormal   byte = 1
	urgencyCritical byte = 2
)

// Notifier sends notifications as one application.
type Notifier struct {
	conn *dbus.Conn
	app  string
}

// Open connects to the session bus (DBUS_SESSION_BUS_ADDRESS) as app.
func Open(app string) (*Notifier, error) {
	conn, err := dbus.ConnectSessionBus()
	if err != nil {
		return nil, fmt.Errorf("connect to the session bus: %w", err)
	}
	return &Notifier{conn: conn, app: app}, nil
}

// Over sends on an existing connection (a test's private bus).
func Over(conn *dbus.Conn, app string) *Notifier { return &Notifier{conn: conn, app: app} }

// Show shows one notification and returns the id the service gave it. A
// critical one asks the service to keep it until it is dismissed.
func (n *Notifier) Show(ctx context.Context, title, body string, critical bool) (uint32, error) {
	urgency, timeout := urgencyNormal, int32(-1) // -1: the service's own timeout
	if critical {
		urgency, timeout = urgencyCritical, 0 // 0: never expires
	}
	hints := map[string]dbus.Variant{"urgency": dbus.MakeVariant(urgency)}
	var id uint32
	call := n.conn.Object(service, path).CallWithContext(ctx, notify, 0, n.app, uint32(0), "", title, body, []string{}, hints, timeout)
	if err := call.Store(&id); err != nil {
		return 0, fmt.Errorf("show a notification: %w", err)
	}
	return id, nil
}

// Close ends the connection.
func (n *Notifier) Close() error { return n.conn.Close() }
