// Package fuzz holds the differential fuzz targets of slidelimit: each target
// decodes a random sequence of calls from the fuzzer's bytes, replays it on
// simulated time through a limiter and through a deliberately naive oracle,
// and fails on the first decision where they differ or on any window that
// holds more than the guarantee allows.
//
// The package has no exported API; everything lives in _test.go files. Run a
// target with, for example:
//
//	go test -run='^$' -fuzz='^FuzzRing$' -fuzztime=500000x ./fuzz/
//
// Failures the fuzzer finds are committed under testdata/fuzz/ and replay as
// ordinary tests.
package fuzz
