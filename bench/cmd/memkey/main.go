// Command memkey measures the heap a keyed store keeps per key: it fills a
// fresh store with one admitted call per key (limit 100 per hour, so that no
// key expires or rolls over while it is filled), and divides the live-heap
// growth after a GC by the number of keys. Each call's key ("client-N", 8 to
// 14 bytes) is a string built for that call and dropped after it, as a
// service builds a key per request, so whatever a store keeps of it (the
// string itself, or a copy of its bytes) is counted, for every store alike.
// Run one store per process:
//
//	go run ./cmd/memkey -store httprate -keys 1000000
//
// With -ring it measures ring.New instead: bytes per limiter for several
// limits, and the fixed header beyond 8 bytes per slot.
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"time"

	"github.com/slidelimit/slidelimit/bench/stores"
	"github.com/slidelimit/slidelimit/ring"
)

func heap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

func main() {
	name := flag.String("store", "", "store to measure (see stores.All)")
	n := flag.Int("keys", 1_000_000, "number of distinct keys")
	ringMode := flag.Bool("ring", false, "measure ring.New's footprint instead")
	list := flag.Bool("list", false, "print the store names and exit")
	flag.Parse()
	if *list {
		for _, s := range stores.All() {
			fmt.Println(s.Name)
		}
		return
	}
	if *ringMode {
		measureRing()
		return
	}
	var im *stores.Impl
	for _, s := range stores.All() {
		if s.Name == *name {
			im = &s
		}
	}
	if im == nil {
		fmt.Fprintf(os.Stderr, "memkey: unknown store %q\n", *name)
		os.Exit(2)
	}
	if _, err := stores.ClientKeys(*n); err != nil { // checks n and that the keys are distinct
		fmt.Fprintln(os.Stderr, "memkey:", err)
		os.Exit(1)
	}
	before := heap()
	s := im.New(100, time.Hour, *n)
	var keyBytes int
	for i := range *n {
		k := stores.ClientKey(i)
		keyBytes += len(k)
		if !s.Allow(k) {
			fmt.Fprintf(os.Stderr, "memkey: %s refused the first call for key %d\n", im.Name, i)
			os.Exit(1)
		}
	}
	after := heap()
	runtime.KeepAlive(s)
	fmt.Printf("memkey store=%s keys=%d bytes=%d bytes/key=%.1f keybytes=%.1f\n",
		im.Name, *n, after-before, float64(after-before)/float64(*n), float64(keyBytes)/float64(*n))
}

func measureRing() {
	const count = 1000
	for _, limit := range []int{1, 100, 10_000} {
		ls := make([]*ring.Limiter, count)
		before := heap()
		for i := range ls {
			l, err := ring.New(limit, time.Second)
			if err != nil {
				fmt.Fprintln(os.Stderr, "memkey:", err)
				os.Exit(1)
			}
			ls[i] = l
		}
		after := heap()
		runtime.KeepAlive(ls)
		per := float64(after-before) / count
		fmt.Printf("memring limit=%d bytes/limiter=%.1f slots=%d header=%.1f\n", limit, per, 8*limit, per-8*float64(limit))
	}
}
