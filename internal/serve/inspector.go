package serve

import (
	"context"
	"io"
	"log/slog"
	"time"

	"github.com/meridian-gw/meridian/internal/inspector"
)

// Defaults of the request inspector's bounds.
const (
	DefaultCaptureMaxAge = inspector.DefaultMaxAge
	DefaultCaptureMaxMiB = inspector.DefaultMaxBytes >> 20
)

// RequestsExport writes the captured requests since a time to w as JSON
// lines, oldest first, and returns how many.
func RequestsExport(ctx context.Context, dataDir, storeDSN string, since time.Time, w io.Writer) (int, error) {
	st, err := openStores(ctx, Config{DataDir: dataDir, Store: storeDSN}, slog.New(slog.DiscardHandler))
	if err != nil {
		return 0, err
	}
	defer st.close()
	return inspector.Export(ctx, st.shared.Captures, since, w)
}
