package nilvalue

import "testing"

type stringer interface{ String() string }

type named struct{}

func (*named) String() string { return "" }

func TestIs(t *testing.T) {
	var p *named
	var s stringer = p
	var m map[int]int
	var f func()
	for _, c := range []struct {
		name string
		v    any
		want bool
	}{
		{"nil", nil, true},
		{"nil pointer", p, true},
		{"nil pointer in an interface", s, true},
		{"nil map", m, true},
		{"nil func", f, true},
		{"nil slice", []int(nil), true},
		{"nil channel", (chan int)(nil), true},
		{"pointer", &named{}, false},
		{"struct", named{}, false},
		{"zero int", 0, false},
		{"empty map", map[int]int{}, false},
	} {
		if got := Is(c.v); got != c.want {
			t.Errorf("Is(%s) = %v, want %v", c.name, got, c.want)
		}
	}
}
