package v1alpha1

import (
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validConfig is the example, which must pass; each case mutates a copy.
func validConfig() *ShardConfig {
	return &ShardConfig{
		TypeMeta:   metav1.TypeMeta{APIVersion: APIVersion, Kind: Kind},
		ObjectMeta: metav1.ObjectMeta{Name: "shards"},
		Spec: ShardConfigSpec{
			Contexts: []Context{
				{
					Name:              "foo_bar_baz_00",
					NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"spotify.com/cluster-shard": "00"}},
					DataStores: []DataStore{{Name: "events", Endpoints: []string{
						"https://etcd-events-00-0:2379", "https://etcd-events-00-1:2379"}}},
				},
				{
					Name:              "foo_bar_baz_01",
					NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"spotify.com/cluster-shard": "01"}},
				},
			},
			DataStoreOverrides: []DataStoreOverride{{Resource: "/events", DataStore: "events"}},
			DefaultContext:     "foo_bar_baz_00",
		},
	}
}

func TestValidate(t *testing.T) {
	ctx0 := "spec.contexts[0]"
	ep0 := ctx0 + ".dataStores[0].endpoints[0]"
	cases := []struct {
		name   string
		mutate func(c *ShardConfig)
		// want lists "field: type" of every expected error, in any order.
		want []string
	}{
		{name: "issue example is valid", mutate: func(*ShardConfig) {}},
		{name: "no contexts", mutate: func(c *ShardConfig) {
			c.Spec.Contexts = nil
			c.Spec.DefaultContext = ""
			c.Spec.DataStoreOverrides = nil
		}, want: []string{"spec.contexts: Required value"}},

		// Context names: used in annotations ("a,b", "ctx=ds") and as directory names.
		{name: "empty context name", mutate: func(c *ShardConfig) { c.Spec.Contexts[1].Name = "" },
			want: []string{"spec.contexts[1].name: Required value"}},
		{name: "duplicate context name", mutate: func(c *ShardConfig) { c.Spec.Contexts[1].Name = "foo_bar_baz_00" },
			want: []string{"spec.contexts[1].name: Duplicate value"}},
		{name: "space in context name", mutate: func(c *ShardConfig) { c.Spec.Contexts[1].Name = "foo bar" },
			want: []string{"spec.contexts[1].name: Invalid value"}},
		{name: "tab in context name", mutate: func(c *ShardConfig) { c.Spec.Contexts[1].Name = "foo\tbar" },
			want: []string{"spec.contexts[1].name: Invalid value"}},
		{name: "newline in context name", mutate: func(c *ShardConfig) { c.Spec.Contexts[1].Name = "foo\n" },
			want: []string{"spec.contexts[1].name: Invalid value"}},
		{name: "comma in context name", mutate: func(c *ShardConfig) { c.Spec.Contexts[1].Name = "a,b" },
			want: []string{"spec.contexts[1].name: Invalid value"}},
		{name: "equals in context name", mutate: func(c *ShardConfig) { c.Spec.Contexts[1].Name = "a=b" },
			want: []string{"spec.contexts[1].name: Invalid value"}},
		{name: "slash in context name", mutate: func(c *ShardConfig) { c.Spec.Contexts[1].Name = "arn:aws:eks:eu-west-1:1:cluster/x" },
			want: []string{"spec.contexts[1].name: Invalid value"}},
		{name: "backslash in context name", mutate: func(c *ShardConfig) { c.Spec.Contexts[1].Name = `a\b` },
			want: []string{"spec.contexts[1].name: Invalid value"}},
		{name: "dot context name", mutate: func(c *ShardConfig) { c.Spec.Contexts[1].Name = "." },
			want: []string{"spec.contexts[1].name: Invalid value"}},
		{name: "dotdot context name", mutate: func(c *ShardConfig) { c.Spec.Contexts[1].Name = ".." },
			want: []string{"spec.contexts[1].name: Invalid value"}},
		{name: "context name with dots, colon, at and dash is fine", mutate: func(c *ShardConfig) {
			c.Spec.Contexts[1].Name = "admin@gke_proj_europe-west1.b:x"
		}},
		{name: "both context names bad: all reported", mutate: func(c *ShardConfig) {
			c.Spec.Contexts[0].Name = "a b"
			c.Spec.Contexts[1].Name = ""
			c.Spec.DefaultContext = ""
		}, want: []string{"spec.contexts[0].name: Invalid value", "spec.contexts[1].name: Required value"}},

		// Selectors.
		{name: "bad selector operator", mutate: func(c *ShardConfig) {
			c.Spec.Contexts[1].NamespaceSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "shard", Operator: "Equals", Values: []string{"01"}}}}
		}, want: []string{"spec.contexts[1].namespaceSelector.matchExpressions[0].operator: Invalid value"}},
		{name: "bad selector key", mutate: func(c *ShardConfig) {
			c.Spec.Contexts[1].ResourceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"bad key": "x"}}
		}, want: []string{"spec.contexts[1].resourceSelector.matchLabels: Invalid value"}},
		{name: "bad selector value", mutate: func(c *ShardConfig) {
			c.Spec.Contexts[1].ResourceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "not valid!"}}
		}, want: []string{"spec.contexts[1].resourceSelector.matchLabels: Invalid value"}},
		{name: "In without values", mutate: func(c *ShardConfig) {
			c.Spec.Contexts[0].NamespaceSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "shard", Operator: metav1.LabelSelectorOpIn}}}
		}, want: []string{"spec.contexts[0].namespaceSelector.matchExpressions[0].values: Required value"}},
		{name: "Exists with values", mutate: func(c *ShardConfig) {
			c.Spec.Contexts[0].ResourceSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "shard", Operator: metav1.LabelSelectorOpExists, Values: []string{"x"}}}}
		}, want: []string{"spec.contexts[0].resourceSelector.matchExpressions[0].values: Forbidden"}},
		{name: "empty selectors are valid (they match everything)", mutate: func(c *ShardConfig) {
			c.Spec.Contexts[1].NamespaceSelector = &metav1.LabelSelector{}
			c.Spec.Contexts[1].ResourceSelector = &metav1.LabelSelector{}
		}},

		// Datastores and endpoints.
		{name: "datastore without endpoints", mutate: func(c *ShardConfig) { c.Spec.Contexts[0].DataStores[0].Endpoints = nil },
			want: []string{ctx0 + ".dataStores[0].endpoints: Required value"}},
		{name: "endpoint without scheme", mutate: func(c *ShardConfig) { c.Spec.Contexts[0].DataStores[0].Endpoints = []string{"etcd-0:2379"} },
			want: []string{ep0 + ": Invalid value"}},
		{name: "ftp endpoint", mutate: func(c *ShardConfig) { c.Spec.Contexts[0].DataStores[0].Endpoints = []string{"ftp://etcd-0:2379"} },
			want: []string{ep0 + ": Invalid value"}},
		{name: "endpoint with #", mutate: func(c *ShardConfig) { c.Spec.Contexts[0].DataStores[0].Endpoints = []string{"https://etcd-0:2379#x"} },
			want: []string{ep0 + ": Invalid value"}},
		{name: "second endpoint bad: index named", mutate: func(c *ShardConfig) {
			c.Spec.Contexts[0].DataStores[0].Endpoints = []string{"https://etcd-0:2379", "https://etcd-1:2379;https://etcd-2:2379"}
		}, want: []string{ctx0 + ".dataStores[0].endpoints[1]: Invalid value"}},
		{name: "empty endpoint", mutate: func(c *ShardConfig) { c.Spec.Contexts[0].DataStores[0].Endpoints = []string{""} },
			want: []string{ep0 + ": Invalid value"}},
		{name: "datastore named default", mutate: func(c *ShardConfig) {
			c.Spec.Contexts[1].DataStores = []DataStore{{Name: "default", Endpoints: []string{"https://e:2379"}}}
		}, want: []string{"spec.contexts[1].dataStores[0].name: Invalid value"}},
		{name: "datastore name not DNS", mutate: func(c *ShardConfig) { c.Spec.Contexts[0].DataStores[0].Name = "Events_1" },
			want: []string{ctx0 + ".dataStores[0].name: Invalid value",
				// the override now names a datastore nobody declares
				"spec.dataStoreOverrides[0].dataStore: Invalid value"}},
		{name: "duplicate datastore in one context", mutate: func(c *ShardConfig) {
			c.Spec.Contexts[0].DataStores = append(c.Spec.Contexts[0].DataStores, DataStore{Name: "events", Endpoints: []string{"https://e:2379"}})
		}, want: []string{ctx0 + ".dataStores[1].name: Duplicate value"}},
		{name: "same datastore name in two contexts is fine", mutate: func(c *ShardConfig) {
			c.Spec.Contexts[1].DataStores = []DataStore{{Name: "events", Endpoints: []string{"http://etcd-events-01:2379"}}}
		}},

		// defaultContext and overrides.
		{name: "defaultContext undeclared", mutate: func(c *ShardConfig) { c.Spec.DefaultContext = "foo_bar_baz_02" },
			want: []string{"spec.defaultContext: Not found"}},
		{name: "override names an undeclared datastore", mutate: func(c *ShardConfig) {
			c.Spec.DataStoreOverrides = append(c.Spec.DataStoreOverrides, DataStoreOverride{Resource: "coordination.k8s.io/leases", DataStore: "leases"})
		}, want: []string{"spec.dataStoreOverrides[1].dataStore: Invalid value"}},
		{name: "override names the default datastore", mutate: func(c *ShardConfig) { c.Spec.DataStoreOverrides[0].DataStore = "default" },
			want: []string{"spec.dataStoreOverrides[0].dataStore: Invalid value"}},
		{name: "override without resource or datastore", mutate: func(c *ShardConfig) {
			c.Spec.DataStoreOverrides[0] = DataStoreOverride{}
		}, want: []string{"spec.dataStoreOverrides[0].resource: Required value", "spec.dataStoreOverrides[0].dataStore: Required value"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := validConfig()
			tc.mutate(c)
			var got []string
			for _, e := range c.Validate() {
				got = append(got, e.Field+": "+e.Type.String())
			}
			slices.Sort(got)
			want := slices.Clone(tc.want)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("Validate() errors:\n got %q\nwant %q\nfull: %v", got, want, c.Validate())
			}
		})
	}
}

func TestValidateDefaultContextMessageNamesIt(t *testing.T) {
	c := validConfig()
	c.Spec.DefaultContext = "nope"
	errs := c.Validate()
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), `"nope"`) {
		t.Errorf("want one error naming \"nope\", got %v", errs)
	}
}

func TestValidateEndpoint(t *testing.T) {
	cases := []struct {
		endpoint string
		// wantErr is a fragment of the error, "" when the endpoint is valid.
		wantErr string
	}{
		{"https://etcd-events-00-0:2379", ""},
		{"http://10.0.0.1:2379", ""},
		{"http://[fd00::1]:2379", ""},
		{"https://etcd.example.com", ""},
		{"", "must not be empty"},
		{"etcd-0:2379", "http:// or https://"},
		{"//etcd-0:2379", "http:// or https://"},
		{"ftp://etcd-0:2379", "http:// or https://"},
		{"unix:///var/run/etcd.sock", "http:// or https://"},
		{"https://etcd-0:2379#frag", `'#'`},
		{"https://etcd-0:2379;https://etcd-1:2379", `';'`},
		{"https://etcd-0:2379,https://etcd-1:2379", `','`},
		{`https://etcd-0:2379"`, `'"'`},
		{"https://etcd-0 :2379", "whitespace"},
		{" https://etcd-0:2379", "whitespace"},
		{"https://etcd-0:2379\n", "whitespace"},
		{"https://", "must name a host"},
		{"https://:2379", "must name a host"},
	}
	for _, tc := range cases {
		t.Run(tc.endpoint, func(t *testing.T) {
			err := ValidateEndpoint(tc.endpoint)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("ValidateEndpoint(%q) = %v, want nil", tc.endpoint, err)
			case tc.wantErr != "" && err == nil:
				t.Errorf("ValidateEndpoint(%q) = nil, want an error containing %s", tc.endpoint, tc.wantErr)
			case tc.wantErr != "" && !strings.Contains(err.Error(), tc.wantErr):
				t.Errorf("ValidateEndpoint(%q) = %v, want it to contain %s", tc.endpoint, err, tc.wantErr)
			}
		})
	}
}

func TestValidateContextNameTooLong(t *testing.T) {
	p := field.NewPath("name")
	if errs := ValidateContextName(strings.Repeat("a", 253), p); len(errs) != 0 {
		t.Errorf("253 characters: %v", errs)
	}
	errs := ValidateContextName(strings.Repeat("a", 254), p)
	if len(errs) != 1 || errs[0].Type != field.ErrorTypeTooLong {
		t.Errorf("254 characters: want one TooLong error, got %v", errs)
	}
}
