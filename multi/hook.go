//go:build !slidelimit_hooks

package multi

// testHook marks a point inside a lock-free call where a test built with the
// slidelimit_hooks tag (hook_on.go) runs other calls, to make a race a few
// loads wide happen every time. In normal builds it is empty and inlined
// away: the call sites cost nothing. It is internal/slidelog's testHook
// again, on purpose: multi's limiters run slidelog's code too, and a hook
// variable of each package's own keeps a test that stops Approx at its points
// from being called at slidelog's (whose point numbers overlap).
func testHook(point int) {}
