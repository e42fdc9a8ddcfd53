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
// for what happens when the bound is reached. Giving it twice is an error.
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
