package claude

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/meridian-gw/meridian/internal/backend"
	"github.com/meridian-gw/meridian/internal/backend/subproc"
)

// authStatus is the output of `claude auth status --json`.
type authStatus struct {
	LoggedIn    bool   `json:"loggedIn"`
	AuthMethod  string `json:"authMethod"`
	APIProvider string `json:"apiProvider"`
}

// Version runs `claude --version` and returns the version number.
func (d *Driver) Version(ctx context.Context) (string, error) {
	out, err := d.run(ctx, "--version")
	if err != nil {
		return "", err
	}
	v, _, _ := strings.Cut(strings.TrimSpace(string(out)), " ")
	if v == "" {
		return "", errors.New("claude --version printed nothing")
	}
	return v, nil
}

// Auth runs `claude auth status --json` as the gateway's sessions see
// it: without the user's settings files (--setting-sources=, as every
// session runs), whose env block may hold a token meant for a client,
// such as the placeholder `meridian setup claude-code` writes. A
// logged-out CLI exits 1 but still prints its status, which is then
// returned without error.
func (d *Driver) Auth(ctx context.Context) (backend.Auth, error) {
	out, runErr := d.run(ctx, "--setting-sources=", "auth", "status", "--json")
	var st authStatus
	if err := json.Unmarshal(bytes.TrimSpace(out), &st); err != nil {
		if runErr != nil {
			return backend.Auth{}, runErr
		}
		return backend.Auth{}, fmt.Errorf("claude auth status: unexpected output %q", truncate(out, 120))
	}
	return backend.Auth{LoggedIn: st.LoggedIn, Method: st.AuthMethod, Provider: st.APIProvider}, nil
}

// Models starts a CLI process only to read the model list from its
// initialize reply; no user message is sent, so no API call is made.
func (d *Driver) Models(ctx context.Context) ([]backend.Model, error) {
	p, err := d.launch(ctx, backend.StartOptions{})
	if err != nil {
		return nil, err
	}
	defer p.Close()
	raw, err := p.request(ctx, "models_", initializeRequest{Subtype: "initialize", SystemPrompt: []string{""}})
	if err != nil {
		return nil, err
	}
	var reply struct {
		Models []struct {
			Value         string `json:"value"`
			ResolvedModel string `json:"resolvedModel"`
			DisplayName   string `json:"displayName"`
			Description   string `json:"description"`
		} `json:"models"`
	}
	if err := json.Unmarshal(raw, &reply); err != nil {
		return nil, fmt.Errorf("claude initialize reply: %w", err)
	}
	models := make([]backend.Model, 0, len(reply.Models))
	for _, m := range reply.Models {
		models = append(models, backend.Model{Alias: m.Value, ID: m.ResolvedModel, DisplayName: m.DisplayName, Description: m.Description})
	}
	return models, nil
}

// run executes a short CLI command and returns its stdout. The process is
// killed when ctx ends and always joined.
func (d *Driver) run(ctx context.Context, args ...string) ([]byte, error) {
	path, err := d.Locate()
	if err != nil {
		return nil, err
	}
	out, _, err := subproc.Run(ctx, d.cfg.Launcher, Spec{Path: path, Args: args, Env: d.env(backend.StartOptions{})})
	if err != nil {
		return out, fmt.Errorf("claude %s: %w", strings.Join(args, " "), err)
	}
	return out, nil
}
