// Package store names every durable record Meridian keeps, one contract
// per concern: conversations and their delivered tool results, turn
// leases, the unfinished-request journal, stored responses with the event
// logs of background runs, saved answers, telemetry records, profile
// benches, the start-time options of new conversations, API keys with
// what their limits count, and the hosts sharing the store. Two engines implement them
// (sqlite, the embedded default; postgres, for several hosts) over one set
// of statements (sqlstore), and the conformance suite (storetest) holds
// both to the same behaviour. Nothing outside the store packages knows
// which engine it has.
package store

import (
	"context"
	"errors"
	"time"
)

// Errors every engine reports alike.
var (
	// ErrConflict: the record changed since it was read (a
	// compare-and-swap lost).
	ErrConflict = errors.New("store: the record changed since it was read")
	// ErrFenced: a publish carried a lease token that no longer holds
	// the conversation; its successor's state is kept.
	ErrFenced = errors.New("store: the turn lease was taken over")
	// ErrNotFound: no such record (for the asking scope).
	ErrNotFound = errors.New("store: no such record")
	// ErrFull: a bound is reached and nothing may be evicted to make room.
	ErrFull = errors.New("store: full")
)

// Store is an opened store: every concern's records, and Close.
type Store struct {
	Conversations Conversations
	Leases        Leases
	Journal       Journal
	Responses     Responses
	Events        Events
	Answers       Answers
	Telemetry     Telemetry
	Bench         Bench
	Figures       Figures
	Alerts        Alerts
	Starts        Starts
	Keys          Keys
	Aliases       Aliases
	Captures      Captures
	Hosts         Hosts
	Signals       Signals
	// Engine names the engine ("sqlite", "postgres") and Where its place
	// (a file, a host:port and database; never a password), for logs and
	// status.
	Engine, Where string
	// Close releases the engine's connections.
	Close func() error
}

// Owner names who holds a record: a meridian host (stable per data dir)
// and one process's incarnation on it.
type Owner struct {
	Host        string
	Incarnation string
}

// Owners says who holds records: this process, and whether another
// owner's process still runs (package cluster answers).
type Owners interface {
	Self() Owner
	Alive(ctx context.Context, o Owner) (bool, error)
}

// Conversation is a conversation's mapping to the CLI session that holds
// it, with its lineage state encoded by the session package.
type Conversation struct {
	Profile, Key string
	Client       string
	SessionID    string
	Digests      []byte
	Pins         string
	Tail         []byte
	Slot         bool
	Messages     int
	Cwd          string
	ClientCwd    string
	Model        string
	// Version is 0 for a conversation never published and grows by one
	// with each publish.
	Version        int64
	Continuations  int
	Compactions    int
	Undos          int
	Divergences    int
	LastInputBytes int
	// Holder is the process that published it last: the one whose CLI
	// wrote its transcript, and most likely holds it live. Its turns are
	// best answered there.
	Holder    Owner
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Publish is how a conversation's new mapping is written.
type Publish struct {
	// Prev is the version it replaces (0: the conversation must not exist).
	Prev int64
	// Fence is the turn lease's token: the write is refused (ErrFenced)
	// unless that lease still holds the conversation. "" publishes
	// without a lease (a first turn known only by its content).
	Fence string
	// Consumed are the tool results the turn delivered, recorded in the
	// same transaction.
	Consumed []string
	Now      time.Time
}

// Conversations keeps conversation mappings and the tool results already
// delivered to a CLI, each bounded (oldest first).
type Conversations interface {
	// Load returns the mapping; ok is false for one never published.
	Load(ctx context.Context, profile, key string) (c Conversation, ok bool, err error)
	// Latest returns the mapping of key under the profile that last
	// answered it; ok is false when none did.
	Latest(ctx context.Context, key string) (c Conversation, ok bool, err error)
	// List returns a profile's newest conversations first.
	List(ctx context.Context, profile string, limit int) ([]Conversation, error)
	// SessionIDs lists every stored conversation's CLI session.
	SessionIDs(ctx context.Context) ([]string, error)
	// Publish writes c as a compare-and-swap on p.Prev (ErrConflict),
	// fenced by p.Fence (ErrFenced). A version beside an error means the
	// mapping was stored and only the pruning after it failed.
	Publish(ctx context.Context, c Conversation, p Publish) (int64, error)
	// Consumed returns which of a conversation's tool result ids were
	// delivered already.
	Consumed(ctx context.Context, profile, conversation string, ids []string) ([]string, error)
	// ShareTranscript keeps data, the CLI's own transcript of session
	// sessionID (compressed by the caller), with the conversation, while
	// the conversation is still at that session; ok is false once it has
	// moved on (or is gone). A later share replaces it.
	ShareTranscript(ctx context.Context, profile, key, sessionID string, data []byte) (ok bool, err error)
	// Transcript returns the conversation's shared transcript and the
	// session it is of; ok is false when none is kept.
	Transcript(ctx context.Context, profile, key string) (sessionID string, data []byte, ok bool, err error)
	// PruneSuperseded deletes copies of conversations under a profile
	// that another profile has answered since (see PruneCopies): the
	// mapping, its shared transcript and its delivered tool results. It
	// returns the CLI sessions of the copies deleted, oldest first.
	PruneSuperseded(ctx context.Context, p PruneCopies) ([]string, error)
}

// PruneCopies says which superseded copies PruneSuperseded deletes: those
// unused since Before, at most Limit, except one whose turn lease is held
// at Now or whose CLI session Keep names (a live process's).
type PruneCopies struct {
	Before, Now time.Time
	Limit       int
	Keep        func(sessionID string) bool
}

// LeaseClaim asks for a conversation's turn lease.
type LeaseClaim struct {
	Profile, Key string
	// Token names this holding of the lease: unique, so a publish can be
	// fenced by it.
	Token string
	Owner Owner
	Now   time.Time
	TTL   time.Duration
}

// LeaseHolder is who holds a lease now.
type LeaseHolder struct {
	Token   string
	Owner   Owner
	Expires time.Time
}

// LeaseGrant is what a claim on a lease came to: taken, held by another
// (Held, and by whom), or released meanwhile (neither).
type LeaseGrant struct {
	Taken bool
	// Version is, when Taken, the conversation's published version as
	// the lease was taken, publishes that commit while the claim waits
	// included (0: it has no row). A turn that read that version before
	// it claimed the lease need not read the row again.
	Version int64
	Held    bool
	Holder  LeaseHolder
}

// Leases keeps turn leases: one holder per conversation, until it
// releases the lease or lets it expire.
type Leases interface {
	// Acquire takes the lease when no one holds it or its holder's has
	// expired; otherwise it reports the holder or that the lease was
	// released meanwhile.
	Acquire(ctx context.Context, c LeaseClaim) (LeaseGrant, error)
	// TakeOver takes the lease from the holding whose token is from
	// (known gone), if it still holds it. Holder is never reported.
	TakeOver(ctx context.Context, c LeaseClaim, from string) (LeaseGrant, error)
	// Renew extends a holding; false when another holding has the lease.
	Renew(ctx context.Context, profile, key, token string, expires time.Time) (bool, error)
	// Release gives a holding up.
	Release(ctx context.Context, profile, key, token string) error
	// Held counts a profile's leases held (not expired) at now.
	Held(ctx context.Context, profile string, now time.Time) (int, error)
}

// JournalEntry is a request with an explicit id while it runs.
type JournalEntry struct {
	Hash    string
	Owner   Owner
	Started time.Time
}

// Journal keeps the requests with explicit ids while they run.
type Journal interface {
	// Begin records e unless an entry for its hash exists (returned, nil
	// error) or max entries are kept (ErrFull). Entries started at or
	// before expired are forgotten first.
	Begin(ctx context.Context, e JournalEntry, expired time.Time, max int) (*JournalEntry, error)
	// End removes owner's entry for hash.
	End(ctx context.Context, hash string, owner Owner) error
}

// Response is a stored Responses API response.
type Response struct {
	ID         string
	Scope      string
	CreatedAt  time.Time
	Status     string
	Background bool
	Previous   string
	Owner      Owner
	// Input is the request's resolved input items; Object the response
	// object, both JSON.
	Input  []byte
	Object []byte
	// Cancel says a cancel was asked for while it ran.
	Cancel bool
}

// ResponseLimits bound the stored responses: count and bytes, every host
// together.
type ResponseLimits struct {
	MaxCount int
	MaxBytes int64
}

// Unfinished are the statuses of a response still being answered.
var Unfinished = []string{"queued", "in_progress"}

// Responses keeps stored responses in one oldest-first ledger. Running
// responses are never evicted.
type Responses interface {
	// Put stores a new response, evicting the oldest finished ones when
	// the bounds require it (ErrFull when only running ones are left).
	Put(ctx context.Context, r Response, lim ResponseLimits) error
	// Update records a response's status and object (ErrNotFound when it
	// was deleted), then makes room from the other finished responses;
	// it never evicts the one updated, nor fails for want of room.
	Update(ctx context.Context, id, status string, object []byte, lim ResponseLimits) error
	// Fail sets a response's status and object unless it finished first;
	// false when it had.
	Fail(ctx context.Context, id string, object []byte) (bool, error)
	// Enforce evicts until the bounds hold, as far as finished responses
	// allow.
	Enforce(ctx context.Context, lim ResponseLimits) error
	// Get returns a response of scope (ErrNotFound for another scope's).
	Get(ctx context.Context, scope, id string) (Response, error)
	// Delete removes a response of scope.
	Delete(ctx context.Context, scope, id string) error
	// Unfinished lists the responses still being answered, by any owner.
	Unfinished(ctx context.Context) ([]Response, error)
	// AskCancel marks a running response of scope to be cancelled; false
	// when it is not running.
	AskCancel(ctx context.Context, scope, id string) (bool, error)
	// Usage reports the responses kept and their bytes.
	Usage(ctx context.Context) (count int, bytes int64, err error)
	// SealKey returns the key that seals reasoning handed to clients: the
	// stored one, or fresh when none was stored yet.
	SealKey(ctx context.Context, fresh []byte) ([]byte, error)
}

// EventLog is part of a background response's event log: frames
// numbered from First, and whether the log is complete.
type EventLog struct {
	Frames [][]byte
	// First is the sequence number of Frames[0]; Kept the first the log
	// still holds (the oldest beyond its bound are trimmed).
	First, Kept int
	Ended       bool
}

// Events keeps the event logs of background responses, each bounded in
// bytes.
type Events interface {
	// Append adds frames numbered from seq on, trimming the oldest beyond
	// maxBytes (a log always keeps its last frame). No frames begins an
	// empty log, which readers follow until it ends.
	Append(ctx context.Context, id string, seq int, frames [][]byte, maxBytes int) error
	// End marks a log complete.
	End(ctx context.Context, id string) error
	// Read returns the frames after sequence number after, at most limit.
	Read(ctx context.Context, id string, after, limit int) (EventLog, error)
	// Drop removes a log.
	Drop(ctx context.Context, id string) error
}

// SavedAnswer is a completed request's answer, kept for its retries.
type SavedAnswer struct {
	Scope, Key string
	Status     int
	Header     []byte // JSON object of header values
	Body       []byte
	// Calls are the tool calls the answer handed the client.
	Calls []string
	Saved time.Time
}

// AnswerLimits bound the saved answers: for each credential scope and in
// all, oldest first, each answer at most EntryBytes, each kept for TTL.
type AnswerLimits struct {
	Entries      int
	Bytes        int64
	EntryBytes   int
	TTL          time.Duration
	TotalEntries int
	TotalBytes   int64
}

// Answers keeps saved answers.
type Answers interface {
	// Get returns scope's answer for key unless it expired by now.
	Get(ctx context.Context, scope, key string, now time.Time) (SavedAnswer, bool, error)
	// Put keeps a (replacing the same key), evicting the oldest beyond
	// the bounds; false when it is larger than an answer may be.
	Put(ctx context.Context, a SavedAnswer, lim AnswerLimits) (bool, error)
	// Retire forgets scope's answers that handed the client any of calls.
	Retire(ctx context.Context, scope string, calls []string) error
	// Usage reports, at now, the scopes with answers, the answers and
	// their bytes, and what scope alone keeps.
	Usage(ctx context.Context, scope string, now time.Time) (AnswerUsage, error)
}

// AnswerUsage is what the saved answers hold.
type AnswerUsage struct {
	Scopes, Entries int
	Bytes           int64
	ScopeEntries    int
	ScopeBytes      int64
}

// Request is one request's telemetry record: counts, names and times,
// never message content.
type Request struct {
	ID                              int64
	Host                            string
	At                              time.Time
	API, Client, Conversation       string
	Profile, Model, Effective       string
	Verdict                         string
	Key                             string // the API key's name
	Live, Replay, Stream            bool
	Queue, TTFT, Total              time.Duration
	Input, Output, CacheRead, Cache int64
	Cost                            float64
	Status                          int
	ErrorType                       string
	ErrorMessage                    string // as the client got it, cut short
	Route                           string // why its profile was chosen
}

// RequestFilter selects records for a page of the request list.
type RequestFilter struct {
	API, Client, Model, Verdict, Key string
	// Status is "ok", "error" (any), "client" (a 4xx but 429: the
	// client's to fix), "failed" (the gateway's or upstream's) or an HTTP
	// status code.
	Status string
	// MissedCache keeps only continuations that read nothing from the
	// cache.
	MissedCache bool
}

// RequestTotals sum records.
type RequestTotals struct {
	Requests, Errors, Replays, Unpriced int64
	Input, Output, CacheRead, Cache     int64
	Cost                                float64
	Since                               time.Time
}

// KeyRequests sum one API key's records (Key "" for requests without
// one: the admin key or an open gateway).
type KeyRequests struct {
	Key                             string
	Requests, Errors                int64
	Input, Output, CacheRead, Cache int64
	Cost                            float64
	Last                            time.Time
}

// HostRequests counts one host's records by API and status.
type HostRequests struct {
	Host, API string
	Status    int
	Count     int64
}

// Telemetry keeps request records from every host.
type Telemetry interface {
	Insert(ctx context.Context, recs []Request) error
	// Prune deletes records before a time, then the oldest beyond maxRows.
	Prune(ctx context.Context, before time.Time, maxRows int) error
	// Page lists up to limit records matching f, newest first, with ids
	// below before (0: from the newest).
	Page(ctx context.Context, f RequestFilter, before int64, limit int) ([]Request, error)
	// Between lists the records that arrived in [from, to), oldest first.
	Between(ctx context.Context, from, to time.Time) ([]Request, error)
	// Totals sums every record kept.
	Totals(ctx context.Context) (RequestTotals, error)
	// ByHost counts the records kept per host, API and status.
	ByHost(ctx context.Context) ([]HostRequests, error)
	// ByKey sums the records since a time per API key, by key name.
	ByKey(ctx context.Context, since time.Time) ([]KeyRequests, error)
}

// Bench keeps until when each profile is benched for its rate limit.
type Bench interface {
	// Put benches profile until until, unless it already is for longer;
	// it returns the bench's end as stored.
	Put(ctx context.Context, profile string, until time.Time) (time.Time, error)
	// Benched returns the profiles benched past now.
	Benched(ctx context.Context, now time.Time) (map[string]time.Time, error)
	// Clear ends a profile's bench now (the operator's unbench).
	Clear(ctx context.Context, profile string) error
}

// Figures keeps each profile's plan windows as a host last saw them, so
// every host chooses by the same figures.
type Figures interface {
	// Put keeps a profile's figures unless newer ones are kept already;
	// stored says whether these were.
	Put(ctx context.Context, profile string, f PlanFigures) (stored bool, err error)
	// All returns every profile's figures.
	All(ctx context.Context) (map[string]PlanFigures, error)
}

// Alerts keeps where alerts go and which were sent: one alert per
// crossing, whichever host saw it first.
type Alerts interface {
	// AddSink records a sink; ErrConflict when one has its name.
	AddSink(ctx context.Context, s AlertSink) error
	Sinks(ctx context.Context) ([]AlertSink, error)
	// RemoveSink deletes a sink; ErrNotFound when there is none.
	RemoveSink(ctx context.Context, name string) error
	// Claim records an alert as sent unless one with its key was:
	// claimed says this caller sends it. Records older than a's time
	// less keep are forgotten.
	Claim(ctx context.Context, a SentAlert, keep time.Duration) (claimed bool, err error)
	// Recent lists the latest alerts sent, newest first.
	Recent(ctx context.Context, limit int) ([]SentAlert, error)
}

// AlertSink is a webhook alerts are posted to.
type AlertSink struct {
	Name    string
	URL     string
	Format  string // json or slack
	Secret  string // signs each post
	Created time.Time
}

// SentAlert is one alert as sent; Key names its crossing.
type SentAlert struct {
	Key, Kind, Profile, Message, Host string
	At                                time.Time
}

// PlanFigures are a profile's plan windows as observed at one time; no
// windows at a time clears what was known before it.
type PlanFigures struct {
	ObservedAt time.Time
	Windows    []PlanWindow
}

// PlanWindow is one plan window's share used and reset.
type PlanWindow struct {
	Name     string    `json:"name"`
	Used     float64   `json:"used"` // 0..1
	ResetsAt time.Time `json:"resets_at,omitzero"`
	// Overage: the upstream served from paid extra usage, this window
	// being spent.
	Overage bool `json:"overage,omitempty"`
}

// Starts counts the start-time options new conversations were started
// with, so that a restarted meridian starts its first spare for the ones
// recent traffic used most.
type Starts interface {
	// Record counts one more new conversation of a contract (a digest),
	// keeping its options (encoded by the caller) and when.
	Record(ctx context.Context, profile, contract string, options []byte, at time.Time) error
	// Top returns the options of the profile's contract used most among
	// those used since then, forgetting the others.
	Top(ctx context.Context, profile string, since time.Time) (options []byte, ok bool, err error)
}

// Host is one meridian process's heartbeat.
type Host struct {
	Owner
	// Addr is where the other hosts reach it (its advertised URL).
	Addr    string
	Version string
	Started time.Time
	// Expires is when the host counts as gone without another beat.
	Expires time.Time
	// State is HostServing or HostDraining; Live and Running are its live
	// CLI processes and running turns at its last beat.
	State         string
	Live, Running int
}

// Host states.
const (
	HostServing  = "serving"
	HostDraining = "draining"
)

// Hosts keeps the heartbeats of the meridians sharing the store.
type Hosts interface {
	Beat(ctx context.Context, h Host) error
	// Leave removes a heartbeat: its process stops.
	Leave(ctx context.Context, o Owner) error
	// Get returns a heartbeat; ok false when there is none.
	Get(ctx context.Context, o Owner) (h Host, ok bool, err error)
	// List returns every heartbeat, forgetting those expired before
	// forget.
	List(ctx context.Context, forget time.Time) ([]Host, error)
}

// Signals carry prompt wake-ups between the processes sharing the store:
// a background response's new events, a cancel. They are hints: a
// receiver also looks again on a timer, so a lost signal only delays.
type Signals interface {
	// Notify sends payload to every listener of topic, on any host.
	Notify(ctx context.Context, topic, payload string) error
	// Listen hears topic until stop; the channel is buffered and a slow
	// listener misses signals rather than blocking others.
	Listen(topic string) (signals <-chan string, stop func())
}

// Capture is one request as the inspector keeps it: the columns its list
// filters on, and its parts (JSON, already redacted).
type Capture struct {
	ID     int64
	At     time.Time
	Host   string
	Key    string
	API    string
	Model  string
	Status int
	// Meta is the record, headers and sizes; Request, Written and Answer
	// the parts (empty unless captured with content). Size is what the
	// capture counts against the bound: the bytes of all four.
	Meta, Request, Written, Answer []byte
	Size                           int64
}

// CaptureFilter narrows the captures listed ("" or 0: any).
type CaptureFilter struct {
	Key, API, Model, Host string
	// Failed: only statuses of 400 and more; OK: only below.
	Failed, OK bool
}

// Captures keeps the requests the inspector captured, shared by every
// host.
type Captures interface {
	// Insert keeps a capture and returns its id.
	Insert(ctx context.Context, c Capture) (int64, error)
	// Prune deletes the captures before a time, then the oldest while all
	// kept take more than maxBytes.
	Prune(ctx context.Context, before time.Time, maxBytes int64) error
	// Page lists up to limit captures matching f, newest first, with ids
	// below before (0: from the newest), without their parts.
	Page(ctx context.Context, f CaptureFilter, before int64, limit int) ([]Capture, error)
	// Get returns one capture whole; ErrNotFound.
	Get(ctx context.Context, id int64) (Capture, error)
	// Since lists up to limit whole captures from a time with ids above
	// after, oldest first (an export pages through them).
	Since(ctx context.Context, from time.Time, after int64, limit int) ([]Capture, error)
}
