module github.com/slidelimit/slidelimit/redis

go 1.26.0

replace github.com/slidelimit/slidelimit => ../

require (
	github.com/go-chi/httprate v0.8.0
	github.com/go-chi/httprate-redis v0.3.0
	github.com/go-redis/redis_rate/v10 v10.0.1
	github.com/redis/go-redis/v9 v9.23.0
	github.com/slidelimit/slidelimit v0.0.0-00010101000000-000000000000
	github.com/stretchr/testify v1.12.1
	github.com/ulule/limiter/v3 v3.11.2
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/pkg/errors v0.9.1 // indirect
	github.com/puzpuzpuz/xsync/v3 v3.5.1 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/sys v0.48.0 // indirect
)
