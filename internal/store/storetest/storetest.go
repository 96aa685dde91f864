// Package storetest is the store contracts' conformance suite: one set of
// tests every engine passes, each on a new empty database, covering every
// record kind, the bounds at their limits, compare-and-swap conflicts and
// fencing. The engines' own tests run it (SQLite on a temporary file,
// PostgreSQL on a real server) and add their migrations' tests.
package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/store"
)

// Engine is what the suite needs of an engine.
type Engine struct {
	// New opens a store on a new empty database with these options'
	// bounds, and returns a function that opens another store on the
	// same database: another meridian's view of it.
	New func(t *testing.T, maxConversations, maxConsumed int) (s *store.Store, another func() *store.Store)
	// SignalsAcross says signals reach the listeners of another store
	// on the database, not only this one's.
	SignalsAcross bool
}

// Run runs the suite.
func Run(t *testing.T, e Engine) {
	for _, tc := range []struct {
		name string
		f    func(t *testing.T, e Engine)
	}{
		{"Conversations", testConversations},
		{"ConversationBound", testConversationBound},
		{"PublishConflict", testPublishConflict},
		{"PublishFenced", testPublishFenced},
		{"ConsumedBound", testConsumedBound},
		{"PruneSuperseded", testPruneSuperseded},
		{"Leases", testLeases},
		{"LeaseTakeOver", testLeaseTakeOver},
		{"LeaseGrantVersion", testLeaseGrantVersion},
		{"Journal", testJournal},
		{"JournalBound", testJournalBound},
		{"Responses", testResponses},
		{"ResponseLedger", testResponseLedger},
		{"ResponseLedgerFull", testResponseLedgerFull},
		{"ResponseCancel", testResponseCancel},
		{"SealKey", testSealKey},
		{"Events", testEvents},
		{"EventTrim", testEventTrim},
		{"Answers", testAnswers},
		{"AnswerBounds", testAnswerBounds},
		{"AnswerTotals", testAnswerTotals},
		{"AnswerRetire", testAnswerRetire},
		{"Telemetry", testTelemetry},
		{"TelemetryPrune", testTelemetryPrune},
		{"Bench", testBench},
		{"Figures", testFigures},
		{"Alerts", testAlerts},
		{"Starts", testStarts},
		{"Keys", testKeys},
		{"KeyAdmit", testKeyAdmit},
		{"KeyAdmitShared", testKeyAdmitShared},
		{"KeyUpdate", testKeyUpdate},
		{"Aliases", testAliases},
		{"Captures", testCaptures},
		{"CapturePrune", testCapturePrune},
		{"Hosts", testHosts},
		{"Signals", testSignals},
		{"Shared", testShared},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.f(t, e)
		})
	}
}

// epoch is the suite's clock in Unix milliseconds: every time is an
// offset from it.
const epoch = 1_800_000_000_000

func at(d time.Duration) time.Time { return time.UnixMilli(epoch).Add(d) }

func open(t *testing.T, e Engine) *store.Store {
	s, _ := e.New(t, 0, 0)
	return s
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func wantErr(t *testing.T, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("err = %v, want %v", err, want)
	}
}

// owner is a process on a named host.
func owner(host string) store.Owner { return store.Owner{Host: host, Incarnation: "1"} }
