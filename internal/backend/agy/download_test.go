package agy

import (
	"context"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
)

// pngBytes begins as every PNG does: its media type is sniffed from that.
const pngBytes = "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x02\x00\x00\x00"

// imageHost is an HTTPS server on a loopback address with images, a page
// that is not one, a too-large image and redirects (/to/HOST/PATH).
type imageHost struct {
	srv  *httptest.Server
	hits atomic.Int32
}

func newImageHost(t *testing.T, ip string) *imageHost {
	t.Helper()
	h := &imageHost{}
	mux := http.NewServeMux()
	mux.HandleFunc("/cat.png", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(pngBytes)) })
	mux.HandleFunc("/page", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("<html>not an image</html>")) })
	mux.HandleFunc("/big.png", func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(pngBytes))
		_, _ = w.Write(make([]byte, maxAttachment))
	})
	mux.HandleFunc("/to/", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "https://"+strings.TrimPrefix(r.URL.Path, "/to/"), http.StatusFound)
	})
	l, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Fatal(err)
	}
	h.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.hits.Add(1)
		mux.ServeHTTP(w, r)
	}))
	h.srv.Listener.Close()
	h.srv.Listener = l
	h.srv.StartTLS()
	t.Cleanup(h.srv.Close)
	return h
}

func (h *imageHost) port() string {
	return strconv.Itoa(int(netip.MustParseAddrPort(h.srv.Listener.Addr().String()).Port()))
}

// A download reaches only public addresses: here 127.0.0.2 stands for one
// (the test's Public), and names resolve as the test says. Loopback,
// private and metadata addresses, a redirect to one, plain http, a page
// that is not an image and a too-large image are refused, and what is
// refused is never fetched.
func TestDownloadFetchesOnlyPublicImages(t *testing.T) {
	t.Parallel()
	outside := newImageHost(t, "127.0.0.2")
	inside := newImageHost(t, "127.0.0.1")
	names := map[string]string{"images.example.com": "127.0.0.2", "loop.example.com": "127.0.0.1",
		"private.example.com": "10.1.2.3", "metadata.example.com": "169.254.169.254"}
	roots := x509.NewCertPool()
	roots.AddCert(outside.srv.Certificate())
	d := &Downloader{
		Resolve: func(_ context.Context, host string) ([]netip.Addr, error) {
			if a, ok := names[host]; ok {
				return []netip.Addr{netip.MustParseAddr(a)}, nil
			}
			return nil, errors.New("no such host")
		},
		Public:  func(a netip.Addr) bool { return a == netip.MustParseAddr("127.0.0.2") || publicAddr(a) },
		RootCAs: roots,
	}
	at := func(host, path string) string { return "https://" + host + ":" + outside.port() + path }
	data, mediaType, err := d.Image(context.Background(), at("images.example.com", "/cat.png"))
	if err != nil || mediaType != "image/png" || string(data) != pngBytes {
		t.Fatalf("the public image: %q %q %v", data, mediaType, err)
	}
	fetched := outside.hits.Load()
	for _, raw := range []string{
		at("loop.example.com", "/cat.png"),
		at("private.example.com", "/cat.png"),
		at("metadata.example.com", "/cat.png"),
		"https://127.0.0.1:" + inside.port() + "/cat.png",
		"http://images.example.com:" + outside.port() + "/cat.png",
		"https://user:pw@images.example.com:" + outside.port() + "/cat.png",
	} {
		if _, _, err := d.Image(context.Background(), raw); !errors.Is(err, errRefusedURL) {
			t.Errorf("%s: %v, want refused", raw, err)
		}
	}
	if n := outside.hits.Load(); n != fetched {
		t.Fatalf("refused addresses were fetched: %d requests", n-fetched)
	}
	if _, _, err := d.Image(context.Background(), at("images.example.com", "/to/loop.example.com:"+inside.port()+"/cat.png")); !errors.Is(err, errRefusedURL) {
		t.Fatalf("a redirect to loopback: %v", err)
	}
	if inside.hits.Load() != 0 {
		t.Fatal("the redirect's loopback target was fetched")
	}
	for path, want := range map[string]string{"/page": "did not send a PNG", "/big.png": "larger than"} {
		if _, _, err := d.Image(context.Background(), at("images.example.com", path)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", path, err, want)
		}
	}
}

func TestPublicAddr(t *testing.T) {
	t.Parallel()
	for addr, want := range map[string]bool{
		"8.8.8.8": true, "2606:4700::1111": true,
		"127.0.0.1": false, "10.0.0.1": false, "172.16.0.1": false, "192.168.1.1": false, "169.254.169.254": false,
		"100.64.0.1": false, "0.0.0.0": false, "::1": false, "fe80::1": false, "fc00::1": false, "224.0.0.1": false,
		"::ffff:127.0.0.1": false, "198.18.0.1": false, "240.0.0.1": false,
	} {
		if got := publicAddr(netip.MustParseAddr(addr).Unmap()); got != want {
			t.Errorf("publicAddr(%s) = %v, want %v", addr, got, want)
		}
	}
}
