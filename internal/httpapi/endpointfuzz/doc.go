// Package endpointfuzz holds the fuzz targets of the HTTP endpoints: the
// whole handler, with an in-process stand-in CLI behind it. They live
// apart from the handler's own tests so that their binary leaves out what
// those tests link (the store drivers, SQLite's translated C above all):
// a fuzz build instruments every package it links, and that instrumenting
// took most of a cold fuzz run's four minutes.
package endpointfuzz
