package datastore

import (
	"maps"
	"strings"
	"testing"
)

func TestFormatAnnotation(t *testing.T) {
	cases := []struct {
		name             string
		contexts, stores []string
		want             string
	}{
		{"one context", []string{"c00"}, []string{"events"}, "events"},
		{"one context, main etcd", []string{"c00"}, []string{"default"}, "default"},
		{"contexts agree", []string{"c00", "c01"}, []string{"events", "events"}, "events"},
		{"contexts disagree", []string{"c00", "c01"}, []string{"events", "default"}, "c00=events,c01=default"},
		{"pairs in the order given", []string{"a", "b", "c"}, []string{"default", "events", "default"}, "a=default,b=events,c=default"},
		{"no contexts", nil, nil, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := FormatAnnotation(tc.contexts, tc.stores); got != tc.want {
				t.Errorf("FormatAnnotation(%q, %q) = %q, want %q", tc.contexts, tc.stores, got, tc.want)
			}
		})
	}
}

func TestParseAnnotation(t *testing.T) {
	cases := []struct {
		name     string
		value    string
		contexts []string
		want     map[string]string
		wantErr  string
	}{
		{name: "one name for every context", value: "events", contexts: []string{"c00", "c01"},
			want: map[string]string{"c00": "events", "c01": "events"}},
		{name: "surrounding space", value: " default ", contexts: []string{"c00"},
			want: map[string]string{"c00": "default"}},
		{name: "pairs", value: "c00=events,c01=default", contexts: []string{"c00", "c01"},
			want: map[string]string{"c00": "events", "c01": "default"}},
		{name: "pairs with spaces around them", value: "c00=events, c01=default", contexts: []string{"c00", "c01"},
			want: map[string]string{"c00": "events", "c01": "default"}},
		{name: "empty", value: "", wantErr: "empty"},
		{name: "blank", value: "  ", wantErr: "empty"},
		{name: "several names without contexts", value: "events,default", wantErr: "ctx=datastore"},
		{name: "pair without datastore", value: "c00=", wantErr: `"c00="`},
		{name: "pair without context", value: "=events", wantErr: `"=events"`},
		{name: "pairs mixed with a name", value: "c00=events,default", wantErr: `"default"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseAnnotation(tc.value, tc.contexts)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("ParseAnnotation(%q) = %v, %v; want an error mentioning %s", tc.value, got, err, tc.wantErr)
				}
				return
			}
			if err != nil || !maps.Equal(got, tc.want) {
				t.Errorf("ParseAnnotation(%q) = %v, %v; want %v", tc.value, got, err, tc.want)
			}
		})
	}
}

// TestAnnotationRoundTrip: what FormatAnnotation writes, ParseAnnotation
// reads back into the same context -> datastore assignment.
func TestAnnotationRoundTrip(t *testing.T) {
	for _, stores := range [][]string{
		{"events"},
		{"events", "events", "events"},
		{"events", "default", "leases"},
		{"default", "default", "events"},
	} {
		contexts := []string{"c00", "c01", "c02"}[:len(stores)]
		value := FormatAnnotation(contexts, stores)
		got, err := ParseAnnotation(value, contexts)
		if err != nil {
			t.Errorf("%q: %v", value, err)
			continue
		}
		for i, c := range contexts {
			if got[c] != stores[i] {
				t.Errorf("%q: context %s reads back %q, want %q", value, c, got[c], stores[i])
			}
		}
	}
}
