package redis_test

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestReadmeExample: the program in the README's Redis section is
// ExampleNewLog (run against a real server by go test, its output checked),
// with the examples' server address replaced by localhost:6379, so that the
// README cannot drift from code that runs.
func TestReadmeExample(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	section := string(readme)
	i := strings.Index(section, "\n## Redis\n")
	require.NotEqual(t, -1, i, "README.md has no Redis section")
	section = section[i:]
	program := between(t, section, "```go\n", "\n```\n")
	readmeBody := between(t, program, "func main() {\n", "\n}")

	src, err := os.ReadFile("example_test.go")
	require.NoError(t, err)
	exampleBody := between(t, string(src), "func ExampleNewLog() {\n", "\n}\n")
	exampleBody = strings.ReplaceAll(exampleBody, "exampleAddr()", `"localhost:6379"`)
	require.Equal(t, exampleBody, readmeBody, "the README's Redis program is not ExampleNewLog's body")
}

// between returns the text of s after the first from and before the next to.
func between(t *testing.T, s, from, to string) string {
	t.Helper()
	i := strings.Index(s, from)
	require.NotEqual(t, -1, i, "%q not found", from)
	s = s[i+len(from):]
	j := strings.Index(s, to)
	require.NotEqual(t, -1, j, "%q not found after %q", to, from)
	return s[:j]
}
