// Package faultmatrix is the fault-and-attack matrix, run by hand with
// scripts/fault-matrix (its tests build only with the faultmatrix tag):
// three meridians on 127.0.0.2-4 sharing one PostgreSQL behind HAProxy,
// the pinned claude CLI against the fake upstream, and every probe a
// client, an attacker or a failing host makes — holders killed or paused
// mid-stream, duplicates across hosts, the store going away, a drain,
// header and body bounds, hostile bodies and raw-HTTP oddities — each
// logged with its figure. It is not part of ./scripts/test: it takes
// minutes and kills hosts, and each defect it finds gets a test of its
// own in the package where it is caused.
package faultmatrix
