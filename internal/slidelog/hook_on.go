//go:build slidelimit_hooks

package slidelog

// With the slidelimit_hooks tag, testHook calls hookFn, when set, with the
// point reached. Only the TestHook tests set it, from one goroutine, before
// the call that reaches the point; hookFn runs inside that call (which holds
// no lock) and must clear hookFn before it makes calls that reach a point
// themselves. See hook.go for the normal build.

// hookFn is the function testHook calls; nil: none.
var hookFn func(point int)

func testHook(point int) {
	if hookFn != nil {
		hookFn(point)
	}
}
