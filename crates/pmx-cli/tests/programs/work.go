// perf_diff.rs: a Go program (maps, sorting, formatting) for SECONDS
// (argv[1]); built with go build.
package main

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"time"
)

func next(x *uint64) uint64 {
	*x ^= *x << 13
	*x ^= *x >> 7
	*x ^= *x << 17
	return *x
}

//go:noinline
func round(x *uint64) int {
	words := map[string]uint64{}
	counts := map[uint64]uint64{}
	v := make([]uint64, 0, 2000)
	for i := 0; i < 2000; i++ {
		r := next(x) % 100000
		words[fmt.Sprintf("w%d", r%3000)] += r
		counts[r%997]++
		v = append(v, r)
	}
	sort.Slice(v, func(i, j int) bool { return v[i] < v[j] })
	keys := make([]string, 0, len(words))
	for k := range words {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return len(keys) + len(counts) + int(v[len(v)/2])
}

func main() {
	secs := 0.8
	if len(os.Args) > 1 {
		if s, err := strconv.ParseFloat(os.Args[1], 64); err == nil {
			secs = s
		}
	}
	end := time.Now().Add(time.Duration(secs * float64(time.Second)))
	x, total := uint64(88172645463325252), 0
	for time.Now().Before(end) {
		total += round(&x)
	}
	fmt.Println(total)
}
