package agentloop

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/session"
)

// fragmentSize is the size of the argument fragments of the tests and the
// benchmark below, about what a provider streams at a time.
const fragmentSize = 1 << 10

// assembleArguments assembles one tool call whose arguments, size bytes,
// stream in fragments, and returns the arguments.
func assembleArguments(size int) string {
	frag := strings.Repeat("a", fragmentSize)
	var s assembler
	c := Chunk{ToolCall: &session.ChunkToolCall{Index: 0, ID: "call_1", Name: "write_file", Arguments: `{"text":"`}}
	s.add(&c, 1, 1)
	for n := 0; n < size; n += fragmentSize {
		c := Chunk{ToolCall: &session.ChunkToolCall{Index: 0, Arguments: frag}}
		s.add(&c, 1, 1)
	}
	c = Chunk{ToolCall: &session.ChunkToolCall{Index: 0, Arguments: `"}`}}
	s.add(&c, 1, 1)
	return s.message().ToolCalls[0].Arguments
}

// measure returns the bytes allocated and the time taken by f.
func measure(f func()) (uint64, time.Duration) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	begun := time.Now()
	f()
	took := time.Since(begun)
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc, took
}

// Assembling a tool call's streamed arguments takes time and memory in
// proportion to their size: ten times the arguments allocate about ten
// times the bytes (joining fragments by concatenation allocates a hundred
// times). Bytes allocated, not time, are what the test bounds, since they
// do not depend on how busy the machine is.
func TestAssemblingArgumentsIsLinear(t *testing.T) {
	const small, large = 1 << 20, 10 << 20
	var args string
	smallBytes, smallTime := measure(func() { args = assembleArguments(small) })
	require.Len(t, args, small+len(`{"text":""}`))
	largeBytes, largeTime := measure(func() { args = assembleArguments(large) })
	require.Len(t, args, large+len(`{"text":""}`))
	ratio := float64(largeBytes) / float64(smallBytes)
	t.Logf("1 MiB in %d-byte fragments: %d bytes allocated in %v; 10 MiB: %d bytes in %v; ratio %.1f (bytes), %.1f (time)",
		fragmentSize, smallBytes, smallTime, largeBytes, largeTime, ratio, float64(largeTime)/float64(smallTime))
	assert.Less(t, ratio, 20.0, "assembly allocates superlinearly")
}

func BenchmarkAssembleArguments(b *testing.B) {
	for _, size := range []int{1 << 20, 10 << 20} {
		b.Run(fmt.Sprintf("%dMiB", size>>20), func(b *testing.B) {
			b.SetBytes(int64(size))
			for b.Loop() {
				assembleArguments(size)
			}
		})
	}
}
