package golden

import "testing"

func TestMaskBytes(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`- message: 'capacity: context "a": 8 objects (53.3%), 1695 bytes (1.7 KiB, 55.5%)'`,
			`- message: 'capacity: context "a": 8 objects (53.3%), <bytes>'`},
		{`- message: 'capacity: context "a" datastore "d": 4 objects (26.7%), 664 bytes (21.7%)'`,
			`- message: 'capacity: context "a" datastore "d": 4 objects (26.7%), <bytes>'`},
		{"  tags:\n    bytes: \"1695\"\n    context: a\n", "  tags:\n    bytes: \"<bytes>\"\n    context: a\n"},
		// Not a byte count: left alone.
		{"  data:\n    bytes: \"12\"x\n", "  data:\n    bytes: \"12\"x\n"},
		{"name: 12bytes", "name: 12bytes"},
	} {
		if got := MaskBytes(tc.in); got != tc.want {
			t.Errorf("MaskBytes(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestMaskResultBytes(t *testing.T) {
	in := "items:\n- data:\n    bytes: \"12\"\n    note: 3 bytes\nresults:\n- message: 'x: 12 bytes (1.0%)'\n  tags:\n    bytes: \"12\"\n"
	want := "items:\n- data:\n    bytes: \"12\"\n    note: 3 bytes\nresults:\n- message: 'x: <bytes>'\n  tags:\n    bytes: \"<bytes>\"\n"
	if got := MaskResultBytes(in); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if got := MaskResultBytes("items: []\n"); got != "items: []\n" {
		t.Errorf("no results: got %q", got)
	}
}
