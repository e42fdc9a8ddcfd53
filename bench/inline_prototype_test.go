package bench

import (
	"fmt"
	"hash/maphash"
	"os"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/slidelimit/slidelimit/bench/stores"
	"github.com/slidelimit/slidelimit/internal/clock"
	"github.com/slidelimit/slidelimit/internal/twocount"
	"github.com/slidelimit/slidelimit/internal/twoword"
)

// protoSlot is one key: its hash (0: empty), its state and its bytes.
type protoSlot struct {
	hash uint64
	at   atomic.Uint64
	cnt  atomic.Uint64
	klen uint64
	key  [16]byte
}

// protoShard is one of 256 tables, picked by the hash's top byte.
type protoShard struct {
	slots []protoSlot
	used  int
	_     [64 - 32]byte
}

// protoStore is the prototype store.
type protoStore struct {
	seed   maphash.Seed
	rule   twocount.Rule
	base   clock.Base
	shards [256]protoShard
}

func newProto(limit int, w time.Duration, n int) stores.Store {
	p := &protoStore{seed: maphash.MakeSeed(), rule: twocount.Rule{Limit: int64(limit), Window: int64(w)}, base: clock.NewBase()}
	for i := range p.shards {
		p.shards[i].slots = make([]protoSlot, 8)
	}
	return p
}

func (p *protoStore) find(s *protoShard, h uint64, key string) *protoSlot {
	sl := s.slots
	i := int((h << 8 >> 8) % uint64(len(sl)))
	for {
		x := &sl[i]
		if x.hash == 0 {
			return nil
		}
		if x.hash == h && int(x.klen) == len(key) && unsafe.String(&x.key[0], x.klen) == key {
			return x
		}
		if i++; i == len(sl) {
			i = 0
		}
	}
}

func (p *protoStore) insert(s *protoShard, h uint64, key string) *protoSlot {
	if (s.used+1)*10 > len(s.slots)*7 {
		old := s.slots
		s.slots = make([]protoSlot, len(old)*2)
		for j := range old {
			o := &old[j]
			if o.hash == 0 {
				continue
			}
			i := int((o.hash << 8 >> 8) % uint64(len(s.slots)))
			for s.slots[i].hash != 0 {
				if i++; i == len(s.slots) {
					i = 0
				}
			}
			x := &s.slots[i]
			x.hash, x.klen, x.key = o.hash, o.klen, o.key
			x.at.Store(o.at.Load())
			x.cnt.Store(o.cnt.Load())
		}
	}
	sl := s.slots
	i := int((h << 8 >> 8) % uint64(len(sl)))
	for sl[i].hash != 0 {
		if i++; i == len(sl) {
			i = 0
		}
	}
	x := &sl[i]
	if len(key) > len(x.key) {
		panic("inline prototype: key longer than 16 bytes")
	}
	x.hash, x.klen = h, uint64(len(key))
	copy(x.key[:], key)
	s.used++
	return x
}

func (p *protoStore) Allow(key string) bool {
	h := maphash.String(p.seed, key) | 1
	s := &p.shards[h>>56]
	x := p.find(s, h, key)
	if x == nil {
		x = p.insert(s, h, key)
	}
	ok, _ := twoword.Allow(&x.at, &x.cnt, &p.rule, p.base.Now(), 1)
	return ok
}

// BenchmarkInlineSlotsPrototype measures a design keyed.Window does not use
// (docs/keyed.md, "Cache misses per decision"): each key's two-counter state
// inline in the slot of an open-addressing table, so that a decision for a
// present key is one dependent cache miss instead of two (the slot, then the
// cell). The prototype is not a store: its table grows by copying slots,
// which is safe only while no decision runs, so every key is inserted in the
// fixture's setup (one goroutine) and the measured calls only decide. It
// decides with internal/twoword on the slot's words, as keyed.Window does on
// its cell's. Keys of at most 16 bytes only.
// It runs three rounds of keyed.Window, sethvargo and the prototype at 100k
// and 1M keys in random order, with the store's strings and with fresh copies,
// when BENCH_FULL is set; otherwise one round at 1,000 keys, so that CI's
// one-iteration run under the race detector builds no million-key fixture.
func BenchmarkInlineSlotsPrototype(b *testing.B) {
	rounds, sizes := 1, []int{1_000}
	if os.Getenv("BENCH_FULL") != "" {
		rounds, sizes = 3, []int{100_000, 1_000_000}
	}
	ims := []stores.Impl{{Name: "inline-prototype", New: newProto}}
	for _, im := range stores.All() {
		if im.Name == "keyed.Window" || im.Name == "sethvargo" {
			ims = append(ims, im)
		}
	}
	for range rounds {
		for _, n := range sizes {
			for _, order := range []string{"random", "random-copies"} {
				for _, im := range ims {
					b.Run(fmt.Sprintf("keys=%d/order=%s/impl=%s", n, order, im.Name), func(b *testing.B) {
						benchKeyed(b, im, n, order, "mixed")
					})
				}
			}
		}
	}
}
