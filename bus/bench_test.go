package bus_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/vigil-run/vigil/bus"
)

type benchPayload struct {
	N int
}

var benchEvent = bus.NewEvent[*benchPayload]("bench/emit")

func BenchmarkEmit(b *testing.B) {
	for _, n := range []int{1, 10, 100} {
		b.Run(fmt.Sprintf("listeners=%d", n), func(b *testing.B) {
			root := bus.New()
			defer root.Dispose()
			c := root.Context()
			for range n {
				benchEvent.On(c, func(_ context.Context, p *benchPayload) error { p.N++; return nil })
			}
			ctx := context.Background()
			p := &benchPayload{}
			b.ReportAllocs()
			for b.Loop() {
				if err := benchEvent.Emit(ctx, c, p); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkBareCalls(b *testing.B) {
	for _, n := range []int{10, 100} {
		b.Run(fmt.Sprintf("listeners=%d", n), func(b *testing.B) {
			fns := make([]func(context.Context, *benchPayload) error, 0, n)
			for range n {
				fns = append(fns, func(_ context.Context, p *benchPayload) error { p.N++; return nil })
			}
			ctx := context.Background()
			p := &benchPayload{}
			b.ReportAllocs()
			for b.Loop() {
				for _, fn := range fns {
					if err := fn(ctx, p); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

var benchWaterfall = bus.NewWaterfall[*benchPayload, int]("bench/waterfall")

func BenchmarkWaterfall(b *testing.B) {
	b.Run("depth=10", func(b *testing.B) {
		root := bus.New()
		defer root.Dispose()
		c := root.Context()
		for range 10 {
			benchWaterfall.On(c, func(ctx context.Context, p *benchPayload, next bus.Next[*benchPayload, int]) (int, error) {
				p.N++
				return next(ctx, p)
			})
		}
		fallback := func(_ context.Context, p *benchPayload) (int, error) { return p.N, nil }
		ctx := context.Background()
		p := &benchPayload{}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := benchWaterfall.Run(ctx, c, p, fallback); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkDispatchVeto(b *testing.B) {
	root := bus.New()
	defer root.Dispose()
	c := root.Context()
	for range 10 {
		benchEvent.On(c, func(_ context.Context, p *benchPayload) error { p.N++; return nil })
	}
	bus.Veto.On(c, func(_ context.Context, d bus.Dispatch) error {
		if d.Name == "" {
			return fmt.Errorf("unnamed")
		}
		return nil
	})
	ctx := context.Background()
	p := &benchPayload{}
	b.ReportAllocs()
	for b.Loop() {
		if err := benchEvent.Emit(ctx, c, p); err != nil {
			b.Fatal(err)
		}
	}
}
