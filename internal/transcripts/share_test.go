package transcripts

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// keeper is the store's side of shared transcripts, in memory.
type keeper struct {
	mu      sync.Mutex
	session map[string]string // key → the conversation's current session
	shared  map[string][2]string
}

func (k *keeper) ShareTranscript(_ context.Context, _, key, id string, data []byte) (bool, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.session[key] != id {
		return false, nil
	}
	k.shared[key] = [2]string{id, string(data)}
	return true, nil
}

func (k *keeper) Transcript(_ context.Context, _, key string) (string, []byte, bool, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	s, ok := k.shared[key]
	return s[0], []byte(s[1]), ok, nil
}

// A transcript written by one host's CLI is saved whole lines only and
// written back, byte for byte, where another host's CLI looks for it;
// one already there is left alone, and a damaged or older one is not
// restored.
func TestSharedTranscriptsGoFromOneHostToAnother(t *testing.T) {
	k := &keeper{session: map[string]string{"conv": "sess-1"}, shared: map[string][2]string{}}
	a := &Shared{Keeper: k, Profile: "default", ConfigDir: t.TempDir()}
	b := &Shared{Keeper: k, Profile: "default", ConfigDir: t.TempDir()}
	cwdA, cwdB := "/data/a/workspace", "/data/b/workspace"
	lines := []byte("{\"type\":\"user\"}\n{\"type\":\"assistant\"}\n")
	src := a.path(cwdA, "sess-1")
	if err := os.MkdirAll(filepath.Dir(src), 0o700); err != nil {
		t.Fatal(err)
	}
	// The CLI is midway through its next line: that part is not shared.
	if err := os.WriteFile(src, append(bytes.Clone(lines), []byte(`{"type":"us`)...), 0o600); err != nil {
		t.Fatal(err)
	}
	a.Save("conv", "sess-1", cwdA)
	a.Close()

	ctx := context.Background()
	ok, err := b.Restore(ctx, "conv", "sess-1", cwdB)
	if err != nil || !ok {
		t.Fatalf("restore: %v %v", ok, err)
	}
	got, err := os.ReadFile(b.path(cwdB, "sess-1"))
	if err != nil || !bytes.Equal(got, lines) {
		t.Fatalf("restored %q (%v), want %q", got, err, lines)
	}
	// Restored once, the file is the CLI's: restoring again keeps it.
	if err := os.WriteFile(b.path(cwdB, "sess-1"), []byte("the CLI wrote on\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if ok, _ := b.Restore(ctx, "conv", "sess-1", cwdB); !ok {
		t.Fatal("a transcript already here is not taken")
	}
	if got, _ := os.ReadFile(b.path(cwdB, "sess-1")); string(got) != "the CLI wrote on\n" {
		t.Fatalf("restore overwrote the CLI's own transcript: %q", got)
	}
	// Another session's, or a damaged copy: the conversation replays.
	if ok, err := b.Restore(ctx, "conv", "sess-2", cwdB); ok || err != nil {
		t.Fatalf("restoring a session never shared: %v %v", ok, err)
	}
	k.shared["conv"] = [2]string{"sess-3", "not gzip"}
	if ok, err := b.Restore(ctx, "conv", "sess-3", cwdB); ok || err != nil {
		t.Fatalf("restoring a damaged copy: %v %v", ok, err)
	}
	// A conversation that moved on to another session keeps the copy of
	// its current one.
	k.session["conv"] = "sess-4"
	a.Save("conv", "sess-1", cwdA)
	a.Close()
	if s, _, _, _ := k.Transcript(ctx, "default", "conv"); s != "sess-3" {
		t.Fatalf("a stale session's share replaced the copy: %s", s)
	}
}
