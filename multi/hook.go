//go:build !slidelimit_hooks

package multi

// testHook marks a point inside a lock-free call where a test built with the
// slidelimit_hooks tag (hook_on.go) runs other calls, to make a race a few
// loads wide happen every time. In normal builds it is empty and inlined
// away: the call sites cost nothing.
func testHook(point int) {}
