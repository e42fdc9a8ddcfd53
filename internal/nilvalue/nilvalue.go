// Package nilvalue tells whether a value a caller handed over is nil, also
// when it is a nil pointer (or map, slice, func or channel) held in an
// interface, whose methods would dereference it: the check behind the
// constructors' "is nil" errors.
package nilvalue

import "reflect"

// Is reports whether v is nil: a nil interface, or a nil pointer, map,
// slice, func, channel or interface held in one.
func Is(v any) bool {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Invalid:
		return true
	case reflect.Pointer, reflect.Interface, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan:
		return rv.IsNil()
	}
	return false
}
