package keyed

import "fmt"

// An Option configures New.
type Option interface {
	apply(*config)
}

type config struct {
	maxKeys int
	// maxKeysGiven counts the MaxKeys options, so that New can refuse two.
	maxKeysGiven int
}

type maxKeysOption int

func (o maxKeysOption) apply(c *config) {
	c.maxKeys = int(o)
	c.maxKeysGiven++
}

// MaxKeys bounds the number of keys a Limiter holds, between 1 and
// MaxMaxKeys. The default is DefaultMaxKeys. See the package documentation
// for what happens when the bound is reached, and for the memory it bounds:
// MaxKeys times the bytes of one key, which for a ring grows with its limit
// (8 bytes per unit: a million rings of limit 10,000 hold about 77 GiB).
// Giving it twice is an error.
func MaxKeys(n int) Option { return maxKeysOption(n) }

// configure applies opts (nil ones are skipped) over the defaults.
func configure(opts []Option) (config, error) {
	c := config{maxKeys: DefaultMaxKeys}
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	if c.maxKeysGiven > 1 {
		return c, fmt.Errorf("keyed: MaxKeys given %d times, want at most once", c.maxKeysGiven)
	}
	if c.maxKeys < 1 || c.maxKeys > MaxMaxKeys {
		return c, fmt.Errorf("keyed: MaxKeys must be between 1 and %d, got %d", MaxMaxKeys, c.maxKeys)
	}
	return c, nil
}
