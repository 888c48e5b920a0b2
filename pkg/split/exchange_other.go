//go:build !linux

package split

func exchange(a, b string) error { return errNoExchange }
