package fakecodeinterp

import (
	"fmt"
	"math/rand/v2"

	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"
)

// pyRandomModule is Python's random module subset: seed, random, randint,
// uniform, choice and shuffle, on a generator of the kernel's own (seeded
// from the OS unless the program calls seed).
func pyRandomModule() *starlarkstruct.Module {
	rng := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	fn := func(name string, f func(args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error)) *starlark.Builtin {
		return starlark.NewBuiltin(name, func(_ *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			return f(args, kwargs)
		})
	}
	return &starlarkstruct.Module{Name: "random", Members: starlark.StringDict{
		"seed": fn("seed", func(args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			var a int64
			if err := starlark.UnpackPositionalArgs("seed", args, kwargs, 0, &a); err != nil {
				return nil, err
			}
			rng = rand.New(rand.NewPCG(uint64(a), 0))
			return starlark.None, nil
		}),
		"random": fn("random", func(starlark.Tuple, []starlark.Tuple) (starlark.Value, error) {
			return starlark.Float(rng.Float64()), nil
		}),
		"uniform": fn("uniform", func(args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			var a, b starlark.Float
			if err := starlark.UnpackPositionalArgs("uniform", args, kwargs, 2, &a, &b); err != nil {
				return nil, err
			}
			return a + (b-a)*starlark.Float(rng.Float64()), nil
		}),
		"randint": fn("randint", func(args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			var a, b int64
			if err := starlark.UnpackPositionalArgs("randint", args, kwargs, 2, &a, &b); err != nil {
				return nil, err
			}
			if b < a {
				return nil, &pyException{"ValueError", fmt.Sprintf("empty range in randrange(%d, %d)", a, b+1)}
			}
			return starlark.MakeInt64(a + rng.Int64N(b-a+1)), nil
		}),
		"choice": fn("choice", func(args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			var seq starlark.Indexable
			if err := starlark.UnpackPositionalArgs("choice", args, kwargs, 1, &seq); err != nil {
				return nil, err
			}
			if seq.Len() == 0 {
				return nil, &pyException{"IndexError", "Cannot choose from an empty sequence"}
			}
			return seq.Index(rng.IntN(seq.Len())), nil
		}),
		"shuffle": fn("shuffle", func(args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			var l *starlark.List
			if err := starlark.UnpackPositionalArgs("shuffle", args, kwargs, 1, &l); err != nil {
				return nil, err
			}
			var err error
			rng.Shuffle(l.Len(), func(i, j int) {
				vi, vj := l.Index(i), l.Index(j)
				if e := l.SetIndex(i, vj); e != nil {
					err = e
				}
				if e := l.SetIndex(j, vi); e != nil {
					err = e
				}
			})
			return starlark.None, err
		}),
	}}
}

// pyMap and pyFilter are Python's map and filter, returning lists (Python
// returns iterators; a list iterates the same way).
func pyMap(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var fn starlark.Callable
	var it starlark.Iterable
	if err := starlark.UnpackPositionalArgs(b.Name(), args, kwargs, 2, &fn, &it); err != nil {
		return nil, err
	}
	return collect(thread, fn, it, false)
}

func pyFilter(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var fn starlark.Value
	var it starlark.Iterable
	if err := starlark.UnpackPositionalArgs(b.Name(), args, kwargs, 2, &fn, &it); err != nil {
		return nil, err
	}
	callable, _ := fn.(starlark.Callable)
	return collect(thread, callable, it, true)
}

// collect applies fn to each element of it: the results (map), or the
// elements for which fn, or the element itself when fn is nil, is true
// (filter).
func collect(thread *starlark.Thread, fn starlark.Callable, it starlark.Iterable, filter bool) (starlark.Value, error) {
	iter := it.Iterate()
	defer iter.Done()
	var out []starlark.Value
	var x starlark.Value
	for iter.Next(&x) {
		v := x
		if fn != nil {
			r, err := starlark.Call(thread, fn, starlark.Tuple{x}, nil)
			if err != nil {
				return nil, err
			}
			v = r
		}
		switch {
		case !filter:
			out = append(out, v)
		case bool(v.Truth()):
			out = append(out, x)
		}
	}
	return starlark.NewList(out), nil
}
