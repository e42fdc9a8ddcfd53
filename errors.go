package slidelimit

import "errors"

// ErrNeverReady is wrapped by the error a limiter's WaitN returns, at once and
// having admitted nothing, when n can never be admitted: n is negative, above
// the limit (for several rules, above the smallest one), or does not fit at
// the latest instant the limiter can represent. The limiter packages export
// it under the same name; errors.Is matches any of them.
var ErrNeverReady = errors.New("request can never be admitted")

// ErrDeadline is wrapped by the error a limiter's WaitN returns, at once and
// having admitted nothing, when the context's deadline falls before the
// instant n could be admitted. The limiter packages export it under the same
// name; errors.Is matches any of them.
var ErrDeadline = errors.New("would exceed context deadline")
