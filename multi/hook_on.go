//go:build slidelimit_hooks

package multi

// With the slidelimit_hooks tag, testHook calls hookFn, when set, with the
// point reached. Only the TestHook tests set it, from one goroutine, before
// the calls that reach the point, and clear it once they have returned;
// hookFn runs inside the call that reaches the point (which holds no lock),
// and when it makes calls that reach a point themselves it must first clear
// hookFn or be ready to be called again from them. A test whose calls run
// in several goroutines orders them itself (with channels), so that hookFn
// is never run by two at once unless it is safe to. See hook.go for the
// normal build.

// hookFn is the function testHook calls; nil: none.
var hookFn func(point int)

func testHook(point int) {
	if hookFn != nil {
		hookFn(point)
	}
}
