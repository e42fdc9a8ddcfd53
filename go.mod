module github.com/slidelimit/slidelimit

go 1.26
