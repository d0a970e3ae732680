package main

import (
	"fmt"
	"reflect"
	"time"

	"github.com/alecthomas/kong"
)

// durationFlags reads the time.Duration flags (--timeout) with a message
// in clusterctl's words: kong's own repeats time.ParseDuration's
// ("time: missing unit in duration") after its own.
func durationFlags() kong.Option {
	return kong.TypeMapper(reflect.TypeOf(time.Duration(0)), kong.MapperFunc(func(ctx *kong.DecodeContext, target reflect.Value) error {
		var s string
		if err := ctx.Scan.PopValueInto("duration", &s); err != nil {
			return err
		}
		d, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("invalid duration %q: expected e.g. 10m, 90s or 1h30m", s)
		}
		target.SetInt(int64(d))
		return nil
	}))
}
