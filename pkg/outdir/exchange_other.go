//go:build !linux

package outdir

func exchange(a, b string) error { return errNoExchange }
