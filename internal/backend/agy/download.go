package agy

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"time"
)

// An image given by URL is downloaded by Meridian, never by agy, and only
// from the public internet: HTTPS, the name resolved once and the
// connection pinned to that address, which must be public (no loopback,
// private, link-local — cloud metadata — or other special address), every
// redirect checked the same way, the size bounded. Whatever the page says,
// what is written into the session folder is an image.

// Downloads are bounded in time and hops.
const (
	downloadTimeout = 30 * time.Second
	maxRedirects    = 3
)

// Downloader fetches attachments by URL. Its zero value resolves with the
// system resolver and trusts the system's roots; tests give a resolver
// and roots of their own.
type Downloader struct {
	// Resolve returns the addresses of host; nil is the system resolver.
	Resolve func(ctx context.Context, host string) ([]netip.Addr, error)
	// Public reports whether an address may be connected to; nil is
	// publicAddr.
	Public func(netip.Addr) bool
	// RootCAs are the certificates trusted; nil is the system's.
	RootCAs *x509.CertPool
}

// errRefusedURL is a URL or a redirect that may not be fetched.
var errRefusedURL = errors.New("the image's address may not be fetched")

// Image downloads the image at raw: its bytes and media type, or why it
// cannot be had. Nothing is fetched from an address that is not public.
func (d *Downloader) Image(ctx context.Context, raw string) ([]byte, string, error) {
	ctx, cancel := context.WithTimeout(ctx, downloadTimeout)
	defer cancel()
	for range maxRedirects + 1 {
		u, addr, err := d.check(ctx, raw)
		if err != nil {
			return nil, "", err
		}
		resp, err := d.client(addr).Do(mustRequest(ctx, u))
		if err != nil {
			return nil, "", fmt.Errorf("the image at %s could not be fetched: %w", u.Host, unwrapURLError(err))
		}
		if loc := resp.Header.Get("Location"); resp.StatusCode >= 300 && resp.StatusCode < 400 && loc != "" {
			resp.Body.Close()
			next, err := u.Parse(loc)
			if err != nil {
				return nil, "", fmt.Errorf("%w: %s redirects to an address that does not parse", errRefusedURL, u.Host)
			}
			raw = next.String()
			continue
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, "", fmt.Errorf("the image at %s could not be fetched: %s answered %d", u.Host, u.Host, resp.StatusCode)
		}
		if resp.ContentLength > maxAttachment {
			return nil, "", fmt.Errorf("the image at %s is larger than %d MiB, the most one attachment may be", u.Host, maxAttachment>>20)
		}
		data, err := io.ReadAll(io.LimitReader(resp.Body, maxAttachment+1))
		if err != nil {
			return nil, "", fmt.Errorf("the image at %s could not be read: %w", u.Host, err)
		}
		if len(data) > maxAttachment {
			return nil, "", fmt.Errorf("the image at %s is larger than %d MiB, the most one attachment may be", u.Host, maxAttachment>>20)
		}
		mediaType := http.DetectContentType(data)
		if !strings.HasPrefix(mediaType, "image/") || extension(mediaType) == "" {
			return nil, "", fmt.Errorf("%s did not send a PNG, JPEG, GIF or WebP image", u.Host)
		}
		return data, mediaType, nil
	}
	return nil, "", fmt.Errorf("%w: more than %d redirects", errRefusedURL, maxRedirects)
}

// check parses raw and resolves its host once: the URL and the public
// address to connect to, or why not.
func (d *Downloader) check(ctx context.Context, raw string) (*url.URL, netip.AddrPort, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil {
		return nil, netip.AddrPort{}, fmt.Errorf("%w: only https URLs without credentials are fetched", errRefusedURL)
	}
	port := uint16(443)
	if p := u.Port(); p != "" {
		n, err := net.LookupPort("tcp", p)
		if err != nil {
			return nil, netip.AddrPort{}, fmt.Errorf("%w: the port does not parse", errRefusedURL)
		}
		port = uint16(n)
	}
	host := u.Hostname()
	addrs, err := d.resolve(ctx, host)
	if err != nil || len(addrs) == 0 {
		return nil, netip.AddrPort{}, fmt.Errorf("the image's host %s does not resolve", host)
	}
	public := d.Public
	if public == nil {
		public = publicAddr
	}
	// Every address must be public: one that is not would let the name
	// point the download inside.
	for _, a := range addrs {
		if !public(a.Unmap()) {
			return nil, netip.AddrPort{}, fmt.Errorf("%w: %s resolves to an address that is not public", errRefusedURL, host)
		}
	}
	return u, netip.AddrPortFrom(addrs[0].Unmap(), port), nil
}

func (d *Downloader) resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{a}, nil
	}
	if d.Resolve != nil {
		return d.Resolve(ctx, host)
	}
	return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
}

// client connects only to addr, whatever the URL's host; TLS still checks
// the host's certificate. Redirects come back to Image to be checked.
func (d *Downloader) client(addr netip.AddrPort) *http.Client {
	dialer := &net.Dialer{Timeout: 10 * time.Second}
	return &http.Client{
		Transport: &http.Transport{
			Proxy: nil,
			DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
				return dialer.DialContext(ctx, network, addr.String())
			},
			TLSClientConfig:       &tls.Config{RootCAs: d.RootCAs, MinVersion: tls.VersionTLS12},
			ResponseHeaderTimeout: 15 * time.Second,
			DisableKeepAlives:     true,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

func mustRequest(ctx context.Context, u *url.URL) *http.Request {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	req.Header.Set("Accept", "image/*")
	return req
}

// unwrapURLError drops the URL from an error: it may carry a query the
// client would not want in an error message.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// publicAddr reports an address on the public internet: not loopback,
// private, link-local (the cloud metadata service), multicast,
// unspecified, shared (100.64/10), documentation, benchmarking or
// reserved.
func publicAddr(a netip.Addr) bool {
	if !a.IsValid() || a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() ||
		a.IsInterfaceLocalMulticast() || a.IsMulticast() || a.IsUnspecified() {
		return false
	}
	for _, p := range specialPrefixes() {
		if p.Contains(a) {
			return false
		}
	}
	return true
}

// specialPrefixes are ranges no public host is in, beyond those netip
// names.
func specialPrefixes() []netip.Prefix {
	var out []netip.Prefix
	for _, s := range []string{"0.0.0.0/8", "100.64.0.0/10", "192.0.0.0/24", "192.0.2.0/24", "198.18.0.0/15",
		"198.51.100.0/24", "203.0.113.0/24", "240.0.0.0/4", "64:ff9b::/96", "100::/64", "2001:db8::/32"} {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}

// TestDownloader is the Downloader a test names in a JSON file (empty
// path: the real one): {"resolve": {host: ip}, "public": [ip], "roots":
// PEM}. Names resolve only as listed, the listed addresses count as
// public beside the real ones, and the roots are trusted; so a test's
// local HTTPS server stands in for a public host, while loopback and
// private addresses stay refused.
func TestDownloader(path string) (Downloader, error) {
	if path == "" {
		return Downloader{}, nil
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return Downloader{}, fmt.Errorf("test downloads: %w", err)
	}
	var spec struct {
		Resolve map[string]string `json:"resolve"`
		Public  []string          `json:"public"`
		Roots   string            `json:"roots"`
	}
	if err := json.Unmarshal(raw, &spec); err != nil {
		return Downloader{}, fmt.Errorf("test downloads: %w", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM([]byte(spec.Roots)) {
		return Downloader{}, errors.New("test downloads: no certificate in roots")
	}
	public := map[netip.Addr]bool{}
	for _, s := range spec.Public {
		a, err := netip.ParseAddr(s)
		if err != nil {
			return Downloader{}, fmt.Errorf("test downloads: %w", err)
		}
		public[a] = true
	}
	return Downloader{
		Resolve: func(_ context.Context, host string) ([]netip.Addr, error) {
			a, err := netip.ParseAddr(spec.Resolve[host])
			if err != nil {
				return nil, fmt.Errorf("no such host %s", host)
			}
			return []netip.Addr{a}, nil
		},
		Public:  func(a netip.Addr) bool { return public[a] || publicAddr(a) },
		RootCAs: roots,
	}, nil
}
