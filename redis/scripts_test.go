package redis

import (
	"regexp"
	"strings"
	"testing"
)

// TestExpiryArgumentsFormatted: every expiry a script passes to Redis (SET
// ... PX/PXAT, PEXPIRE, PEXPIREAT) goes through int, never as a bare Lua
// number. Redis 7.2.0 to 7.2.4 format a multiple of 10^8 in exponent form
// ("1e+08"), which those commands refuse: a decision whose expiry fell on
// such a number failed. The servers the tests start format it correctly, so
// this reads the sources.
func TestExpiryArgumentsFormatted(t *testing.T) {
	call := regexp.MustCompile(`redis\.call\('(SET|PEXPIRE|PEXPIREAT)'.*\)`)
	seen := 0
	for name, s := range map[string]script{"log": logScript, "window": windowScript, "buckets": bucketScript} {
		for _, line := range strings.Split(s.src, "\n") {
			m := call.FindString(line)
			if m == "" || (strings.HasPrefix(m, "redis.call('SET'") && !strings.Contains(m, "px") && !strings.Contains(m, "'PX")) {
				continue
			}
			seen++
			args := m[strings.LastIndex(m, ", ")+2:]
			if !strings.HasPrefix(args, "int(") {
				t.Errorf("%s script: %s: the expiry %s is not formatted by int", name, strings.TrimSpace(line), args)
			}
		}
	}
	if seen != 7 {
		t.Errorf("found %d calls that set an expiry, want 7: update this test with the scripts", seen)
	}
}
