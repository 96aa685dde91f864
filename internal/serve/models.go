package serve

import (
	"context"
	"time"

	"github.com/meridian-gw/meridian/internal/backend/claude"
)

// cliModelsWait bounds reading the CLI's model list: one CLI start and
// its initialize reply, no API call.
const cliModelsWait = 20 * time.Second

// CLIModels are the model names the claude CLI at claudePath offers on its
// own (its initialize reply), for `meridian setup` when no Meridian runs
// to list them. The CLI's "default" is left out: it names no model.
func CLIModels(ctx context.Context, claudePath string, environ []string) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, cliModelsWait)
	defer cancel()
	models, err := claude.New(claude.Config{Path: claudePath, Env: environ}).Models(ctx)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, m := range models {
		if m.Alias != "" && m.Alias != "default" {
			names = append(names, m.Alias)
		}
	}
	return names, nil
}
