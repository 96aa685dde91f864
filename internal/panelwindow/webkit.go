//go:build linux && cgo && webkit

package panelwindow

/*
#cgo pkg-config: webkit2gtk-4.1 gtk+-3.0 libsoup-3.0
#include <stdlib.h>
#include <gtk/gtk.h>
#include <webkit2/webkit2.h>
#include <libsoup/soup.h>

// goDecide is the Go rule for a navigation (policy.go's Decide).
extern int goDecide(char *uri, int newWindow);

static gboolean on_decide(WebKitWebView *view, WebKitPolicyDecision *decision, WebKitPolicyDecisionType type, gpointer data) {
	switch (type) {
	case WEBKIT_POLICY_DECISION_TYPE_NAVIGATION_ACTION:
	case WEBKIT_POLICY_DECISION_TYPE_NEW_WINDOW_ACTION: {
		WebKitNavigationAction *action = webkit_navigation_policy_decision_get_navigation_action(WEBKIT_NAVIGATION_POLICY_DECISION(decision));
		WebKitURIRequest *req = webkit_navigation_action_get_request(action);
		int allowed = goDecide((char *)webkit_uri_request_get_uri(req), type == WEBKIT_POLICY_DECISION_TYPE_NEW_WINDOW_ACTION);
		if (allowed) {
			webkit_policy_decision_use(decision);
		} else {
			webkit_policy_decision_ignore(decision);
		}
		return TRUE;
	}
	case WEBKIT_POLICY_DECISION_TYPE_RESPONSE:
		// What the view cannot show (a download) is not saved anywhere.
		if (!webkit_response_policy_decision_is_mime_type_supported(WEBKIT_RESPONSE_POLICY_DECISION(decision))) {
			webkit_policy_decision_ignore(decision);
			return TRUE;
		}
		return FALSE;
	default:
		return FALSE;
	}
}

static void copy_text(const char *text) {
	GtkClipboard *clip = gtk_clipboard_get(GDK_SELECTION_CLIPBOARD);
	gtk_clipboard_set_text(clip, text, -1);
	// Handed to a clipboard manager, where one runs, to outlive the window.
	gtk_clipboard_store(clip);
}

static void on_cookie_added(GObject *source, GAsyncResult *res, gpointer view) {
	webkit_cookie_manager_add_cookie_finish(WEBKIT_COOKIE_MANAGER(source), res, NULL);
	webkit_web_view_load_uri(WEBKIT_WEB_VIEW(view), g_object_get_data(G_OBJECT(view), "first-uri"));
}

static void on_destroy(GtkWidget *w, gpointer data) { gtk_main_quit(); }

static gboolean on_term(gpointer data) { gtk_main_quit(); return G_SOURCE_REMOVE; }

// quit_soon ends the main loop from any thread.
static void quit_soon(void) { g_idle_add(on_term, NULL); }

// Holding the clipboard: the text is served to whoever pastes until
// another program owns the clipboard (clear_held), or the bound passes.
static char *held_text;

static void get_held(GtkClipboard *clip, GtkSelectionData *data, guint info, gpointer user) {
	gtk_selection_data_set_text(data, held_text, -1);
}

static void clear_held(GtkClipboard *clip, gpointer user) { gtk_main_quit(); }

static int hold_clipboard(const char *text, int seconds) {
	if (!gtk_init_check(NULL, NULL)) {
		return 1;
	}
	held_text = g_strdup(text);
	GtkTargetList *list = gtk_target_list_new(NULL, 0);
	gtk_target_list_add_text_targets(list, 0);
	gint n;
	GtkTargetEntry *targets = gtk_target_table_new_from_list(list, &n);
	GtkClipboard *clip = gtk_clipboard_get(GDK_SELECTION_CLIPBOARD);
	if (!gtk_clipboard_set_with_data(clip, targets, n, get_held, clear_held, NULL)) {
		return 2;
	}
	gtk_clipboard_set_can_store(clip, targets, n);
	gtk_clipboard_store(clip);
	g_timeout_add_seconds(seconds, on_term, NULL);
	gtk_main();
	gtk_target_table_free(targets, n);
	gtk_target_list_unref(list);
	g_free(held_text);
	return 0;
}

static int run_window(const char *uri, const char *title, int width, int height,
		const char *cookie_name, const char *cookie_value, const char *cookie_host) {
	if (!gtk_init_check(NULL, NULL)) {
		return 1;
	}
	// Ephemeral: nothing the window sees is written to disk, the
	// session cookie included.
	WebKitWebContext *ctx = webkit_web_context_new_ephemeral();
	WebKitSettings *settings = webkit_settings_new();
	// The panel runs no script: none runs in the window either, so a
	// page has no way to talk to anything but its origin.
	webkit_settings_set_enable_javascript(settings, FALSE);
	webkit_settings_set_enable_developer_extras(settings, FALSE);
	webkit_settings_set_enable_write_console_messages_to_stdout(settings, FALSE);
	GtkWidget *view = GTK_WIDGET(g_object_new(WEBKIT_TYPE_WEB_VIEW, "web-context", ctx, "settings", settings, NULL));
	g_signal_connect(view, "decide-policy", G_CALLBACK(on_decide), NULL);

	GtkWidget *win = gtk_window_new(GTK_WINDOW_TOPLEVEL);
	gtk_window_set_title(GTK_WINDOW(win), title);
	gtk_window_set_default_size(GTK_WINDOW(win), width, height);
	gtk_window_set_type_hint(GTK_WINDOW(win), GDK_WINDOW_TYPE_HINT_DIALOG);
	gtk_container_add(GTK_CONTAINER(win), view);
	g_signal_connect(win, "destroy", G_CALLBACK(on_destroy), NULL);
	gtk_widget_show_all(win);

	g_object_set_data_full(G_OBJECT(view), "first-uri", g_strdup(uri), g_free);
	if (cookie_name[0]) {
		WebKitWebsiteDataManager *data = webkit_web_context_get_website_data_manager(ctx);
		WebKitCookieManager *cookies = webkit_website_data_manager_get_cookie_manager(data);
		SoupCookie *c = soup_cookie_new(cookie_name, cookie_value, cookie_host, "/", -1);
		soup_cookie_set_http_only(c, TRUE);
		webkit_cookie_manager_add_cookie(cookies, c, NULL, on_cookie_added, view);
		soup_cookie_free(c);
	} else {
		webkit_web_view_load_uri(WEBKIT_WEB_VIEW(view), uri);
	}
	gtk_main();
	return 0;
}
*/
import "C"

import (
	"cmp"
	"fmt"
	"net/url"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"unsafe"
)

// origin is the one window's origin: cgo's callback has no other way to
// reach it, and a process runs one window.
var origin string

//export goDecide
func goDecide(uri *C.char, newWindow C.int) C.int {
	a, text := Decide(origin, C.GoString(uri), newWindow != 0)
	switch a {
	case Allow:
		return 1
	case Copy:
		ct := C.CString(text)
		defer C.free(unsafe.Pointer(ct))
		C.copy_text(ct)
	}
	return 0
}

// Run shows the window until it is closed or the process is told to
// stop; it must be called on the main goroutine, which the caller locks
// to its thread (the toolkit's calls all happen there).
func Run(cfg Config) error {
	runtime.LockOSThread()
	u, err := url.Parse(cfg.Origin)
	if err != nil || u.Host == "" {
		return fmt.Errorf("the gateway's origin %q: not a URL", cfg.Origin)
	}
	origin = cfg.Origin
	name, value, _ := strings.Cut(cfg.Cookie, "=")
	cs := func(s string) *C.char { return C.CString(s) }
	first, title := cs(strings.TrimSuffix(cfg.Origin, "/")+cmp.Or(cfg.Path, "/panel")), cs(cmp.Or(cfg.Title, "Meridian"))
	cn, cv, ch := cs(name), cs(value), cs(u.Hostname())
	defer func() {
		for _, p := range []*C.char{first, title, cn, cv, ch} {
			C.free(unsafe.Pointer(p))
		}
	}()
	defer stopOnSignal()()
	if C.run_window(first, title, C.int(cmp.Or(cfg.Width, 420)), C.int(cmp.Or(cfg.Height, 640)), cn, cv, ch) != 0 {
		return fmt.Errorf("no display to open the panel on (DISPLAY or WAYLAND_DISPLAY)")
	}
	return nil
}

// HoldClipboard puts text on the clipboard and serves it until another
// program takes the clipboard, the process is told to stop, or ten
// minutes pass (a clipboard manager, where one runs, keeps it after).
func HoldClipboard(text string) error {
	runtime.LockOSThread()
	defer stopOnSignal()()
	ct := C.CString(text)
	defer C.free(unsafe.Pointer(ct))
	switch C.hold_clipboard(ct, 600) {
	case 0:
		return nil
	case 1:
		return fmt.Errorf("no display to hold the clipboard on (DISPLAY or WAYLAND_DISPLAY)")
	}
	return fmt.Errorf("the clipboard could not be taken")
}

// stopOnSignal ends the toolkit's loop on SIGTERM or SIGINT, through the
// loop itself; the returned func stops listening.
func stopOnSignal() func() {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	done := make(chan struct{})
	go func() {
		select {
		case <-stop:
			C.quit_soon()
		case <-done:
		}
	}()
	return func() { signal.Stop(stop); close(done) }
}
