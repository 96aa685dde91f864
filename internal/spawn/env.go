package spawn

import (
	"strconv"
	"strings"
)

// The environment contract between a lead and what it starts: the process
// a spawn runs (the worker, its claude, a `meridian claude` session) reads
// what its parent wrote. Writer and reader use these names.
const (
	EnvID         = "MERIDIAN_SPAWN_ID"          // the spawn the process acts as
	EnvDepth      = "MERIDIAN_DEPTH"             // its depth: 0 for a root lead
	EnvProject    = "MERIDIAN_PROJECT"           // its project
	EnvDataDir    = "MERIDIAN_DATA_DIR"          // where the registry and artifacts live
	EnvClaudePath = "MERIDIAN_CLAUDE_PATH"       // the claude CLI the worker runs
	EnvHeartbeat  = "MERIDIAN_SPAWN_HEARTBEAT"   // how often a worker shows it lives
	EnvMaxDepth   = "MERIDIAN_SPAWN_MAX_DEPTH"   // how deep spawns may nest
	EnvReapWindow = "MERIDIAN_SPAWN_REAP_WINDOW" // how long a silent run may look alive
	EnvReapGrace  = "MERIDIAN_SPAWN_REAP_GRACE"  // how long a fresh run may show nothing
	EnvRetention  = "MERIDIAN_SPAWN_RETENTION"   // how long a seen, finished spawn's folder is kept
)

// ChildEnv is what names a spawn to the processes it runs, so whatever
// they start (a nested meridian spawn included) knows whose child it is.
func ChildEnv(id string, depth int, project, dataDir string) map[string]string {
	return map[string]string{EnvID: id, EnvDepth: strconv.Itoa(depth), EnvProject: project, EnvDataDir: dataDir}
}

// Environ returns environ with keys set; an empty value removes a key.
func Environ(environ []string, set map[string]string) []string {
	out := make([]string, 0, len(environ)+len(set))
	for _, kv := range environ {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := set[k]; !ok {
			out = append(out, kv)
		}
	}
	for k, v := range set {
		if v != "" {
			out = append(out, k+"="+v)
		}
	}
	return out
}
