package progress

import (
	"testing"

	"github.com/shard-router/shard-router/internal/ptytest"
)

func TestIsTerminalOnAPty(t *testing.T) {
	_, tty := ptytest.Open(t)
	if !IsTerminal(tty) {
		t.Error("a pty is not taken for a terminal")
	}
}
