// Package bench compares slidelimit's limiters with the Go rate limiters
// people use today, on accuracy (accuracy/, replayed on simulated time) and
// speed (the benchmarks in this directory). It is its own module, so that
// none of the peers enters the library's go.mod. docs/benchmarks.md gives the
// protocol and the results; compare.sh runs them.
package bench
