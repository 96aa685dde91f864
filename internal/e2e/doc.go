// Package e2e holds the system tests: each runs the meridian binary, built
// once per run, as its users do — on one host or several sharing a real
// PostgreSQL, behind HAProxy or nginx, with the pinned claude CLI or the
// agy stand-in against the fake upstream, the official SDKs as clients,
// the pages in a real browser — and checks what a client, an operator or
// a failing host sees. The commands' own flags, help, docs, setup, spawns
// and release are tested beside them in cmd/meridian.
package e2e
