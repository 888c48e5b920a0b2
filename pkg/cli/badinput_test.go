package cli_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/kustomize/kyaml/fn/framework"
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/shard-router/shard-router/internal/testenv"
	"github.com/shard-router/shard-router/pkg/cli"
)

// The bad-input matrix (issue 7): every case must exit non-zero, never
// panic, name the file, the resource and the field at fault on stderr (and
// in an error result in function mode), and leave stdout either a valid
// ResourceList whose items are the input's, unchanged, or empty.

// obj is one item of a test ResourceList, with kpt's path annotations.
type obj struct {
	apiVersion, kind, namespace, name string
	path                              string
	index                             int
	labels, annos                     map[string]string
	// body is extra top-level YAML, indented by two spaces.
	body string
}

func (o obj) String() string {
	var b strings.Builder
	b.WriteString("- ")
	first := true
	field := func(k, v string) {
		if !first {
			b.WriteString("  ")
		}
		first = false
		fmt.Fprintf(&b, "%s: %s\n", k, v)
	}
	if o.apiVersion != "" {
		field("apiVersion", o.apiVersion)
	}
	if o.kind != "" {
		field("kind", o.kind)
	}
	field("metadata", "")
	if o.name != "" {
		fmt.Fprintf(&b, "    name: %s\n", o.name)
	}
	if o.namespace != "" {
		fmt.Fprintf(&b, "    namespace: %s\n", o.namespace)
	}
	writeMap(&b, "labels", o.labels)
	annos := map[string]string{}
	for k, v := range o.annos {
		annos[k] = v
	}
	if o.path != "" {
		for _, p := range []string{"config.kubernetes.io/", "internal.config.kubernetes.io/"} {
			annos[p+"path"] = o.path
			annos[p+"index"] = fmt.Sprint(o.index)
		}
	}
	writeMap(&b, "annotations", annos)
	b.WriteString(o.body)
	return b.String()
}

func writeMap(b *strings.Builder, name string, m map[string]string) {
	if len(m) == 0 {
		return
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	fmt.Fprintf(b, "    %s:\n", name)
	for _, k := range keys {
		fmt.Fprintf(b, "      %s: %q\n", k, m[k])
	}
}

// Items of the base package: a Namespace of shard 00, a ConfigMap in it, a
// ClusterRole.
var (
	nsA      = obj{apiVersion: "v1", kind: "Namespace", name: "team-a", path: "team-a/ns.yaml", labels: map[string]string{"shard": "00"}}
	cmA      = obj{apiVersion: "v1", kind: "ConfigMap", namespace: "team-a", name: "settings", path: "team-a/settings.yaml", body: "  data: {a: \"1\"}\n"}
	nsB      = obj{apiVersion: "v1", kind: "Namespace", name: "team-b", path: "team-b/ns.yaml", labels: map[string]string{"shard": "00"}}
	reader   = obj{apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRole", name: "reader", path: "cluster/reader.yaml"}
	baseObjs = []obj{nsA, cmA, reader}
)

// baseSpec is the spec of the base ShardConfig, indented for shardConfig.
const baseSpec = `    contexts:
    - name: c00
      namespaceSelector: {matchLabels: {shard: "00"}}
    - name: c01
      namespaceSelector: {matchLabels: {shard: "01"}}
`

// shardConfig is a functionConfig read from shards.yaml, as kpt passes one.
func shardConfig(spec string) string {
	return `functionConfig:
  apiVersion: shardrouter.dev/v1alpha1
  kind: ShardConfig
  metadata:
    name: shards
    annotations:
      config.kubernetes.io/path: shards.yaml
      internal.config.kubernetes.io/path: shards.yaml
  spec:
` + spec
}

func resourceListOf(objs []obj, functionConfig string) string {
	var b strings.Builder
	b.WriteString("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n")
	for _, o := range objs {
		b.WriteString(o.String())
	}
	b.WriteString(functionConfig)
	return b.String()
}

// withConfig is the base package under another ShardConfig spec.
func withConfig(spec string) string { return resourceListOf(baseObjs, shardConfig(spec)) }

// withItems is the base config over other items.
func withItems(objs ...obj) string { return resourceListOf(objs, shardConfig(baseSpec)) }

// configWithStores is a valid config with datastores, for override cases.
func configWithStores(overrides string) string {
	return `    contexts:
    - name: c00
      namespaceSelector: {matchLabels: {shard: "00"}}
      dataStores:
      - name: events
        endpoints: ["https://etcd-events-0:2379"]
    dataStoreOverrides:
` + overrides
}

func endpointConfig(ep string) string {
	return fmt.Sprintf(`    contexts:
    - name: c00
      namespaceSelector: {matchLabels: {shard: "00"}}
      dataStores:
      - name: events
        endpoints: [%q]
`, ep)
}

type stdoutWant int

const (
	// listUnchanged: a ResourceList with every item as it came in.
	listUnchanged stdoutWant = iota
	// empty: nothing at all.
	empty
)

type badCase struct {
	name string
	// args are the command line; nil is function mode.
	args []string
	// stdin is the input; in gets it when set, for large inputs.
	stdin string
	in    func() []byte
	// setup prepares files in dir and returns args (for split and overrides).
	setup func(t *testing.T, dir string) []string
	// check runs after the command, for what a case must leave on disk.
	check  func(t *testing.T, dir string)
	stdout stdoutWant
	// file, resource and field must all appear in one stderr error line
	// (and, in function mode with a ResourceList out, in one error result).
	file, resource, field string
	// also are more fragments that the stderr must hold.
	also []string
	// mayPass: the input is valid but hard (size); it must succeed or fail
	// cleanly.
	mayPass bool
	// count is the number of error results (and stderr error lines)
	// expected, when it matters.
	count int
	// maxAlloc bounds the bytes allocated by the run (0: no bound).
	maxAlloc uint64
	slow     bool
	// items is the number of input items, when counting them is slow.
	items int
}

// bomb is a "billion laughs": 9^9 scalars once every alias is expanded.
func bomb() string {
	var b strings.Builder
	b.WriteString("  bomb:\n    l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n")
	for i := 1; i <= 9; i++ {
		p := fmt.Sprintf("*l%d", i-1)
		fmt.Fprintf(&b, "    l%d: &l%d [%s, %s, %s, %s, %s, %s, %s, %s, %s]\n", i, i, p, p, p, p, p, p, p, p, p)
	}
	return b.String()
}

func badCases() []badCase {
	cfgErr := func(name, spec, field string, also ...string) badCase {
		return badCase{name: name, stdin: withConfig(spec), file: "shards.yaml", resource: "function config", field: field, also: also}
	}
	override := func(name, resource string, also ...string) badCase {
		c := cfgErr(name, configWithStores("    - {resource: '"+resource+"', dataStore: events}\n"), "spec.dataStoreOverrides[0].resource", also...)
		return c
	}
	endpoint := func(name, ep string, also ...string) badCase {
		return cfgErr(name, endpointConfig(ep), "spec.contexts[0].dataStores[0].endpoints[0]", also...)
	}
	pinned := func(o obj, ctx string) obj {
		o.annos = map[string]string{"shardrouter.dev/context": ctx}
		return o
	}
	big := strings.Repeat("x", 20<<20)
	return []badCase{
		// Input.
		{name: "input/broken YAML", stdin: "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n- apiVersion: v1\n  kind: [Namespace\n",
			stdout: empty, also: []string{"yaml"}},
		{name: "input/not a ResourceList", stdin: "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: a}\n",
			stdout: empty, also: []string{"not a ResourceList"}},
		{name: "input/a List", stdin: "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n",
			stdout: empty, also: []string{"not a ResourceList"}},
		{name: "input/no apiVersion", stdin: withItems(nsA, obj{kind: "ConfigMap", namespace: "team-a", name: "x", path: "team-a/x.yaml"}),
			file: "team-a/x.yaml", resource: "item", field: "apiVersion"},
		{name: "input/no kind", stdin: withItems(nsA, obj{apiVersion: "v1", namespace: "team-a", name: "x", path: "team-a/x.yaml"}),
			file: "team-a/x.yaml", resource: "item", field: "kind"},
		{name: "input/no metadata.name", stdin: withItems(nsA, obj{apiVersion: "v1", kind: "ConfigMap", namespace: "team-a", path: "team-a/x.yaml"}),
			file: "team-a/x.yaml", resource: "v1 ConfigMap", field: "metadata.name"},
		{name: "input/namespaced kind without namespace", stdin: withItems(nsA, obj{apiVersion: "v1", kind: "Secret", name: "token", path: "token.yaml"}),
			file: "token.yaml", resource: "Secret token", field: "metadata.namespace"},
		{name: "input/duplicate objects", stdin: withItems(nsA, cmA, obj{apiVersion: "v1", kind: "ConfigMap", namespace: "team-a", name: "settings", path: "team-a/again.yaml"}),
			file: "team-a/again.yaml", resource: "ConfigMap team-a/settings", field: "metadata.name", also: []string{"twice"}},
		// Real-manifest classes (issue 14).
		{name: "input/a List item", stdin: withItems(nsA, obj{apiVersion: "v1", kind: "List", path: "team-a/list.yaml", body: "  items:\n  - {apiVersion: v1, kind: ConfigMap, metadata: {name: a, namespace: team-a}}\n"}),
			file: "team-a/list.yaml", resource: "v1 List", field: "kind", also: []string{"kpt does not unwrap Lists"}},
		{name: "input/a *List item", stdin: withItems(nsA, obj{apiVersion: "rbac.authorization.k8s.io/v1", kind: "RoleBindingList", path: "team-a/rbs.yaml", body: "  items: []\n"}),
			file: "team-a/rbs.yaml", resource: "RoleBindingList", field: "kind", also: []string{"list of resources"}},
		{name: "input/old apiVersion without namespace", stdin: withItems(nsA, obj{apiVersion: "batch/v1beta1", kind: "CronJob", name: "nightly", path: "cron.yaml"}),
			file: "cron.yaml", resource: "CronJob nightly", field: "metadata.namespace", also: []string{"it is namespaced but has no metadata.namespace"}},
		{name: "input/one Event through two API groups", stdin: withItems(nsA, obj{apiVersion: "v1", kind: "Event", namespace: "team-a", name: "e", path: "team-a/core.yaml"},
			obj{apiVersion: "events.k8s.io/v1", kind: "Event", namespace: "team-a", name: "e", path: "team-a/events.yaml"}),
			file: "team-a/events.yaml", resource: "Event team-a/e", field: "apiVersion", also: []string{"one object", "team-a/core.yaml"}},
		{name: "input/one Deployment through extensions and apps", stdin: withItems(nsA, obj{apiVersion: "apps/v1", kind: "Deployment", namespace: "team-a", name: "web", path: "team-a/web.yaml"},
			obj{apiVersion: "extensions/v1beta1", kind: "Deployment", namespace: "team-a", name: "web", path: "team-a/old.yaml"}),
			file: "team-a/old.yaml", resource: "Deployment team-a/web", field: "apiVersion", also: []string{"one object", "apps/deployments", "team-a/web.yaml"}},
		{name: "input/merge key labels send a resource where its Namespace does not go", stdin: strings.Replace(resourceListOf([]obj{nsA, {apiVersion: "v1", kind: "ConfigMap", namespace: "team-a", name: "stray", path: "team-a/stray.yaml", labels: map[string]string{"place": "c01"}}},
			shardConfig(baseSpec+"      resourceSelector: {matchLabels: {place: c01}}\n")), "      place: c01\n", "      <<: {place: c01}\n", 1),
			file: "team-a/stray.yaml", resource: "ConfigMap team-a/stray", field: "metadata.labels", also: []string{`"c01"`, `Namespace "team-a"`}},
		{name: "input/non-UTF-8 byte", stdin: strings.Replace(withItems(baseObjs...), "settings", "sett\xffings", 1),
			stdout: empty, also: []string{"UTF-8"}},
		{name: "input/tab indentation", stdin: strings.Replace(withItems(baseObjs...), "\n  kind: ConfigMap", "\n\tkind: ConfigMap", 1),
			stdout: empty, also: []string{"tab"}},
		{name: "input/alias bomb", stdin: withItems(nsA, obj{apiVersion: "example.com/v1", kind: "Bomb", namespace: "team-a", name: "lol", path: "team-a/bomb.yaml", body: bomb(),
			annos: map[string]string{"shardrouter.dev/context": "c01"}}),
			file: "team-a/bomb.yaml", resource: "Bomb team-a/lol", field: "metadata.annotations[shardrouter.dev/context]", maxAlloc: 256 << 20},
		{name: "input/alias bomb in the function config", stdin: resourceListOf(baseObjs, shardConfig(baseSpec+"    "+strings.ReplaceAll(strings.TrimPrefix(bomb(), "  "), "\n    ", "\n      "))),
			file: "shards.yaml", resource: "function config", also: []string{"aliasing"}, maxAlloc: 256 << 20},
		{name: "input/a 20 MB item", stdin: withItems(nsA, obj{apiVersion: "v1", kind: "ConfigMap", namespace: "team-a", name: "huge", path: "team-a/huge.yaml",
			body: "  data: {blob: " + big + "}\n"}, obj{apiVersion: "v1", kind: "ConfigMap", namespace: "team-z", name: "orphan", path: "team-z/orphan.yaml"}),
			file: "team-z/orphan.yaml", resource: "ConfigMap team-z/orphan", field: "metadata.namespace", slow: true},
		{name: "input/200k items", in: manyItems(200_000), items: 200_001, mayPass: true, slow: true},
		{name: "input/empty stream", stdin: "", stdout: empty, also: []string{"input is empty", "ResourceList"}},
		{name: "input/only a document separator", stdin: "---\n", stdout: empty, also: []string{"ResourceList"}},

		// Config.
		{name: "config/unknown kind", stdin: resourceListOf(baseObjs, "functionConfig: {apiVersion: v1, kind: Secret, metadata: {name: shards, annotations: {config.kubernetes.io/path: shards.yaml}}}\n"),
			file: "shards.yaml", resource: "function config", field: "kind", also: []string{"ShardConfig", "ConfigMap"}},
		{name: "config/no function config", stdin: resourceListOf(baseObjs, ""), stdout: listUnchanged, resource: "function config", also: []string{"ShardConfig"}},
		cfgErr("config/unknown field", baseSpec+"    defaultContxt: c00\n", "spec.defaultContxt", "unknown field"),
		cfgErr("config/no contexts", "    contexts: []\n", "spec.contexts", "at least one context"),
		{name: "config/ConfigMap without data", stdin: resourceListOf(baseObjs, "functionConfig: {apiVersion: v1, kind: ConfigMap, metadata: {name: shards, annotations: {config.kubernetes.io/path: shards.yaml}}}\n"),
			file: "shards.yaml", resource: "function config", field: "data", also: []string{"no contexts"}},
		cfgErr("config/duplicate context names", baseSpec+"    - name: c00\n", "spec.contexts[2].name", "c00"),
		cfgErr("config/empty context name", baseSpec+"    - name: ''\n", "spec.contexts[2].name", "Required"),
		cfgErr("config/context name with a comma", "    contexts:\n    - name: 'c0,c1'\n", "spec.contexts[0].name", "','"),
		cfgErr("config/context name with a space", "    contexts:\n    - name: 'c 0'\n", "spec.contexts[0].name", "whitespace"),
		cfgErr("config/selector with a bad operator", "    contexts:\n    - name: c00\n      namespaceSelector: {matchExpressions: [{key: shard, operator: Like, values: ['0']}]}\n",
			"spec.contexts[0].namespaceSelector.matchExpressions[0].operator", "Like"),
		cfgErr("config/selector with a bad key", "    contexts:\n    - name: c00\n      resourceSelector: {matchLabels: {'bad key': x}}\n",
			"spec.contexts[0].resourceSelector.matchLabels", "bad key"),
		cfgErr("config/selector with a bad value", "    contexts:\n    - name: c00\n      resourceSelector: {matchLabels: {shard: 'not a value!'}}\n",
			"spec.contexts[0].resourceSelector.matchLabels", "not a value!"),
		cfgErr("config/In without values", "    contexts:\n    - name: c00\n      namespaceSelector: {matchExpressions: [{key: shard, operator: In}]}\n",
			"spec.contexts[0].namespaceSelector.matchExpressions[0].values", "In"),
		{name: "config/ConfigMap selector that does not parse", stdin: resourceListOf(baseObjs, "functionConfig: {apiVersion: v1, kind: ConfigMap, metadata: {name: shards, annotations: {config.kubernetes.io/path: shards.yaml}}, data: {c00: 'shard in 00', c01: 'shard=01'}}\n"),
			file: "shards.yaml", resource: "function config", field: "data[c00]", also: []string{"shard in 00"}},
		{name: "config/ConfigMap selector with a bad operator", stdin: resourceListOf(baseObjs, "functionConfig: {apiVersion: v1, kind: ConfigMap, metadata: {name: shards, annotations: {config.kubernetes.io/path: shards.yaml}}, data: {c00: 'shard~=00'}}\n"),
			file: "shards.yaml", resource: "function config", field: "data[c00]"},
		cfgErr("config/defaultContext not declared", baseSpec+"    defaultContext: c99\n", "spec.defaultContext", "c99"),
		cfgErr("config/datastore names duplicated in a context", `    contexts:
    - name: c00
      dataStores:
      - {name: events, endpoints: ["https://a:2379"]}
      - {name: events, endpoints: ["https://b:2379"]}
`, "spec.contexts[0].dataStores[1].name", "events"),
		override("override/custom resource", "example.com/widgets", "not a built-in resource"),
		override("override/aggregated resource", "metrics.k8s.io/pods", "not a built-in resource"),
		override("override/virtual resource", "authorization.k8s.io/subjectaccessreviews", "not a built-in resource"),
		override("override/etcd key path", "/registry/events", "key path"),
		override("override/no slash", "events"),
		override("override/whitespace", "/ events"),
		cfgErr("override/duplicate after cohabitation", configWithStores("    - {resource: /events, dataStore: events}\n    - {resource: events.k8s.io/events, dataStore: events}\n"),
			"spec.dataStoreOverrides[1].resource", "stored as /events"),
		cfgErr("override/undeclared datastore", configWithStores("    - {resource: /events, dataStore: leases}\n"),
			"spec.dataStoreOverrides[0].dataStore", "leases"),
		endpoint("endpoint/no scheme", "etcd-0:2379", "http"),
		endpoint("endpoint/other scheme", "unix:///run/etcd.sock", "http"),
		endpoint("endpoint/hash", "https://etcd-0:2379#x", "'#'"),
		endpoint("endpoint/semicolon", "https://etcd-0:2379;https://etcd-1:2379", "';'"),
		endpoint("endpoint/comma", "https://etcd-0:2379,https://etcd-1:2379", "','"),
		endpoint("endpoint/space", "https://etcd-0:2379 ", "whitespace"),
		endpoint("endpoint/empty", "", "empty"),
		cfgErr("endpoint/none", "    contexts:\n    - name: c00\n      dataStores: [{name: events, endpoints: []}]\n", "spec.contexts[0].dataStores[0].endpoints", "at least one"),

		// Routing.
		{name: "routing/pinned to a context that no longer exists", stdin: withItems(pinned(reader, "c07"), obj{apiVersion: "v1", kind: "ConfigMap", namespace: "gone", name: "left", path: "gone/left.yaml", annos: map[string]string{"shardrouter.dev/context": "c07"}}),
			file: "gone/left.yaml", resource: "ConfigMap gone/left", field: "metadata.annotations[shardrouter.dev/context]", also: []string{"c07", "ClusterRole reader"}, count: 2},
		{name: "routing/namespaced resource sent where its namespace does not go", stdin: resourceListOf([]obj{nsA, {apiVersion: "v1", kind: "ConfigMap", namespace: "team-a", name: "stray", path: "team-a/stray.yaml", labels: map[string]string{"place": "c01"}}},
			shardConfig(baseSpec+"      resourceSelector: {matchLabels: {place: c01}}\n")),
			file: "team-a/stray.yaml", resource: "ConfigMap team-a/stray", field: "metadata.labels", also: []string{`"c01"`, `"c00"`, `Namespace "team-a"`}},
		{name: "routing/several refused moves", stdin: withItems(pinned(nsA, "c01"), pinned(nsB, "c01"), pinned(obj{apiVersion: "v1", kind: "Namespace", name: "team-c", path: "team-c/ns.yaml", labels: map[string]string{"shard": "00"}}, "c00,c01")),
			file: "team-a/ns.yaml", resource: "Namespace team-a", field: "metadata.annotations[shardrouter.dev/context]",
			also: []string{"Namespace team-b", "Namespace team-c", "team-b/ns.yaml", "team-c/ns.yaml"}, count: 3},
		{name: "routing/datastore annotation that does not parse", stdin: withItems(nsA, obj{apiVersion: "v1", kind: "ConfigMap", namespace: "team-a", name: "x", path: "team-a/x.yaml",
			annos: map[string]string{"shardrouter.dev/context": "c00", "shardrouter.dev/datastore": "c00=,"}}),
			file: "team-a/x.yaml", resource: "ConfigMap team-a/x", field: "metadata.annotations[shardrouter.dev/datastore]"},

		// split.
		{name: "split/path escaping with ..", stdin: resourceListOf([]obj{nsA, {apiVersion: "v1", kind: "ConfigMap", namespace: "team-a", name: "out", path: "../escape.yaml"}}, shardConfig(baseSpec)),
			setup: splitArgs, check: nothingWritten, stdout: empty, file: "../escape.yaml", resource: "ConfigMap team-a/out", field: "config.kubernetes.io/path"},
		{name: "split/absolute path", stdin: resourceListOf([]obj{nsA, {apiVersion: "v1", kind: "ConfigMap", namespace: "team-a", name: "out", path: "/etc/escape.yaml"}}, shardConfig(baseSpec)),
			setup: splitArgs, check: nothingWritten, stdout: empty, file: "/etc/escape.yaml", resource: "ConfigMap team-a/out", field: "config.kubernetes.io/path"},
		{name: "split/output directory split did not create", stdin: withItems(baseObjs...), setup: func(t *testing.T, dir string) []string {
			putFile(t, filepath.Join(dir, "out", "notes.txt"), "mine\n")
			return splitArgs(t, dir)
		}, check: func(t *testing.T, dir string) {
			if got := getFile(t, filepath.Join(dir, "out", "notes.txt")); got != "mine\n" {
				t.Errorf("a foreign file was changed: %q", got)
			}
			if entries, _ := os.ReadDir(filepath.Join(dir, "out")); len(entries) != 1 {
				t.Errorf("split wrote into a directory it did not create: %v", entries)
			}
		}, stdout: empty, file: "/out", resource: "output directory", also: []string{"not written by shard-router split"}},
		{name: "split/output where a file sits", stdin: withItems(baseObjs...), setup: func(t *testing.T, dir string) []string {
			putFile(t, filepath.Join(dir, "file"), "not a directory\n")
			return []string{"split", "-", "--name", "pkg", "-o", filepath.Join(dir, "file", "out")}
		}, check: func(t *testing.T, dir string) {
			if got := getFile(t, filepath.Join(dir, "file")); got != "not a directory\n" {
				t.Errorf("the file in the way was changed: %q", got)
			}
		}, stdout: empty, file: "file/out", resource: "output directory", also: []string{"not a directory"}},
		{name: "split/context directory that cannot be written", stdin: withItems(baseObjs...), setup: func(t *testing.T, dir string) []string {
			splitOnce(t, dir)
			replace(t, filepath.Join(dir, "out", "c00"), func(p string) error { return os.WriteFile(p, []byte("in the way\n"), 0o644) })
			return splitArgs(t, dir)
		}, check: func(t *testing.T, dir string) {
			if got := getFile(t, filepath.Join(dir, "out", "c00")); got != "in the way\n" {
				t.Errorf("the file in the way was changed: %q", got)
			}
		}, stdout: empty, file: "c00", resource: "", also: []string{"c00"}},
		{name: "split/symlinked context directory", stdin: withItems(baseObjs...), setup: func(t *testing.T, dir string) []string {
			splitOnce(t, dir)
			putFile(t, filepath.Join(dir, "outside", "precious.yaml"), "keep\n")
			replace(t, filepath.Join(dir, "out", "c00"), func(p string) error { return os.Symlink(filepath.Join(dir, "outside"), p) })
			return splitArgs(t, dir)
		}, check: func(t *testing.T, dir string) {
			entries, _ := os.ReadDir(filepath.Join(dir, "outside"))
			if len(entries) != 1 || getFile(t, filepath.Join(dir, "outside", "precious.yaml")) != "keep\n" {
				t.Errorf("split wrote through a symlink out of its output: %v", entries)
			}
		}, stdout: empty, file: "c00", resource: "", also: []string{"symlink"}},
		{name: "split/refused move", stdin: withItems(pinned(nsA, "c01"), cmA, reader), setup: splitArgs, check: nothingWritten, stdout: empty,
			file: "team-a/ns.yaml", resource: "Namespace team-a", field: "metadata.annotations[shardrouter.dev/context]", also: []string{"nothing written"}},
		{name: "split/bad config file", stdin: withItems(baseObjs...), setup: func(t *testing.T, dir string) []string {
			putFile(t, filepath.Join(dir, "bad.yaml"), "apiVersion: shardrouter.dev/v1alpha1\nkind: ShardConfig\nmetadata: {name: shards}\nspec:\n  contexts: [{name: c00, namespaceSelector: {matchLabels: {shard: '00'}}}]\n  defaultContext: c9\n")
			return []string{"split", "-", "--name", "pkg", "-o", filepath.Join(dir, "out"), "--config", filepath.Join(dir, "bad.yaml")}
		}, check: nothingWritten, stdout: empty, file: "bad.yaml", resource: "function config", field: "spec.defaultContext"},
		{name: "split/unknown context", stdin: withItems(baseObjs...), setup: func(t *testing.T, dir string) []string {
			return []string{"split", "-", "--name", "pkg", "--context", "c9", "--previous", dir}
		}, stdout: empty, file: "", resource: `"c9"`, field: "context", also: []string{`"c00", "c01"`}},

		// overrides.
		{name: "overrides/unknown context", setup: func(t *testing.T, dir string) []string {
			return []string{"overrides", "--config", filepath.Join("testdata", "overrides", "shards.yaml"), "--context", "ctx-99"}
		}, stdout: empty, resource: `"ctx-99"`, field: "context", also: []string{`"ctx-00", "ctx-01", "ctx-02"`}},
		{name: "overrides/kamaji with an endpoint Kamaji cannot express", setup: func(t *testing.T, dir string) []string {
			putFile(t, filepath.Join(dir, "shards.yaml"), "apiVersion: shardrouter.dev/v1alpha1\nkind: ShardConfig\nmetadata: {name: shards}\nspec:\n  contexts: [{name: c00, dataStores: [{name: events, endpoints: ['http://etcd-events:2379']}]}]\n  dataStoreOverrides: [{resource: /events, dataStore: events}]\n")
			return []string{"overrides", "--config", filepath.Join(dir, "shards.yaml"), "-o", "kamaji"}
		}, stdout: empty, resource: `datastore "events"`, field: "http://etcd-events:2379", also: []string{`context "c00"`, "https://", "-o flag"}},
		{name: "overrides/bad config", setup: func(t *testing.T, dir string) []string {
			putFile(t, filepath.Join(dir, "bad.yaml"), "apiVersion: shardrouter.dev/v1alpha1\nkind: ShardConfig\nmetadata: {name: shards}\nspec:\n  contexts: [{name: c00, dataStores: [{name: e, endpoints: ['etcd:2379']}]}]\n")
			return []string{"overrides", "--config", filepath.Join(dir, "bad.yaml")}
		}, stdout: empty, file: "bad.yaml", resource: "function config", field: "spec.contexts[0].dataStores[0].endpoints[0]"},
	}
}

func splitArgs(t *testing.T, dir string) []string {
	return []string{"split", "-", "--name", "pkg", "-o", filepath.Join(dir, "out")}
}

// splitOnce writes a good split of the base package into dir/out.
func splitOnce(t *testing.T, dir string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := cli.Main(cli.Streams{In: strings.NewReader(withItems(baseObjs...)), Out: &stdout, Err: &stderr}, splitArgs(t, dir)); code != 0 {
		t.Fatalf("the first split failed: %s", stderr.String())
	}
}

// replace removes p and makes something else there.
func replace(t *testing.T, p string, make func(string) error) {
	t.Helper()
	if err := os.RemoveAll(p); err != nil {
		t.Fatal(err)
	}
	if err := make(p); err != nil {
		t.Fatal(err)
	}
}

func nothingWritten(t *testing.T, dir string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(dir, "out")); err == nil {
		t.Errorf("the output directory was created")
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(dir), "escape.yaml")); err == nil {
		t.Errorf("a file was written outside the output")
	}
}

// manyItems is a package of n ConfigMaps in one Namespace.
func manyItems(n int) func() []byte {
	return func() []byte {
		var b bytes.Buffer
		b.WriteString("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n")
		b.WriteString(nsA.String())
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, "- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: cm-%d\n    namespace: team-a\n    annotations:\n      config.kubernetes.io/path: 'team-a/cm-%d.yaml'\n      config.kubernetes.io/index: '0'\n  data: {k: v}\n", i, i)
		}
		b.WriteString(shardConfig(baseSpec))
		return b.Bytes()
	}
}

// noopItems runs the input through kyaml's framework with a processor that
// does nothing: what "items unchanged" means, since kyaml itself may
// normalise a document.
func noopItems(t *testing.T, input []byte) []string {
	t.Helper()
	var out bytes.Buffer
	noop := framework.ResourceListProcessorFunc(func(*framework.ResourceList) error { return nil })
	if err := framework.Execute(noop, &kio.ByteReadWriter{Reader: bytes.NewReader(input), Writer: &out, KeepReaderAnnotations: true}); err != nil {
		t.Fatalf("kyaml alone cannot read the input: %v", err)
	}
	return itemStrings(t, out.Bytes())
}

// countItems counts the items of a ResourceList.
func countItems(t *testing.T, data []byte) int {
	t.Helper()
	doc, err := yaml.Parse(string(data))
	if err != nil {
		t.Fatalf("not YAML: %v", err)
	}
	items := doc.Field("items")
	if doc.GetKind() != kio.ResourceListKind || items == nil {
		t.Fatalf("not a ResourceList with items")
	}
	return len(items.Value.Content())
}

func itemStrings(t *testing.T, data []byte) []string {
	t.Helper()
	r := &kio.ByteReader{Reader: bytes.NewReader(data), OmitReaderAnnotations: true}
	items, err := r.Read()
	if err != nil {
		t.Fatalf("stdout is not a ResourceList: %v", err)
	}
	if r.WrappingKind != kio.ResourceListKind {
		t.Fatalf("stdout is a %s, not a ResourceList", r.WrappingKind)
	}
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.MustString()
	}
	return out
}

// errorResults returns the error results of a ResourceList as "file | field
// | resource | message" strings.
func errorResults(t *testing.T, data []byte) []string {
	t.Helper()
	doc, err := yaml.Parse(string(data))
	if err != nil {
		t.Fatal(err)
	}
	results := doc.Field("results")
	if results == nil {
		return nil
	}
	var out []string
	for _, r := range results.Value.Content() {
		rn := yaml.NewRNode(r)
		get := func(path ...string) string {
			v, _ := rn.Pipe(yaml.Lookup(path...))
			if v == nil {
				return ""
			}
			return yaml.GetValue(v)
		}
		if get("severity") != "error" {
			continue
		}
		out = append(out, strings.Join([]string{get("file", "path"), get("field", "path"),
			get("resourceRef", "kind") + " " + get("resourceRef", "namespace") + "/" + get("resourceRef", "name"), get("message")}, " | "))
	}
	return out
}

func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if p != "" && !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

func TestBadInputMatrix(t *testing.T) {
	cases := badCases()
	if len(cases) < 30 {
		t.Fatalf("the matrix holds %d cases; issue 7 asks for at least 30", len(cases))
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.slow {
				testenv.Slow(t, "a large input")
			}
			input := []byte(tc.stdin)
			if tc.in != nil {
				input = tc.in()
			}
			dir := t.TempDir()
			args := tc.args
			if tc.setup != nil {
				args = tc.setup(t, dir)
			}
			var stdout, stderr bytes.Buffer
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			code := func() (code int) {
				defer func() {
					if r := recover(); r != nil {
						t.Fatalf("panic: %v", r)
					}
				}()
				return cli.Main(cli.Streams{In: bytes.NewReader(input), Out: &stdout, Err: &stderr}, args)
			}()
			runtime.ReadMemStats(&after)
			if tc.maxAlloc > 0 {
				got := after.TotalAlloc - before.TotalAlloc
				if got > tc.maxAlloc {
					t.Errorf("allocated %d MiB, want at most %d MiB", got>>20, tc.maxAlloc>>20)
				}
				t.Logf("allocated %d KiB for a %d-byte input", got>>10, len(input))
			}
			if tc.check != nil {
				tc.check(t, dir)
			}
			if tc.mayPass {
				if code == 0 {
					want := tc.items
					if want == 0 {
						want = countItems(t, input)
					}
					if got := countItems(t, stdout.Bytes()); got != want {
						t.Errorf("%d items out of %d", got, want)
					}
					return
				}
				if stdout.Len() > 0 {
					checkUnchanged(t, input, stdout.Bytes())
				}
				if !strings.Contains(stderr.String(), "error") {
					t.Errorf("exit %d without an error on stderr:\n%s", code, stderr.String())
				}
				return
			}
			if code == 0 {
				t.Fatalf("exit 0; stderr:\n%s", stderr.String())
			}
			switch tc.stdout {
			case empty:
				if stdout.Len() != 0 {
					t.Errorf("stdout must stay empty, got:\n%.2000s", stdout.String())
				}
			case listUnchanged:
				if stdout.Len() == 0 {
					t.Fatalf("stdout is empty: the ResourceList must come back with its items unchanged; stderr:\n%s", stderr.String())
				}
				checkUnchanged(t, input, stdout.Bytes())
				results := errorResults(t, stdout.Bytes())
				if len(results) == 0 {
					t.Errorf("no error result")
				}
				if tc.count > 0 && len(results) != tc.count {
					t.Errorf("%d error results, want %d:\n%s", len(results), tc.count, strings.Join(results, "\n"))
				}
				found := false
				for _, r := range results {
					found = found || containsAll(r, tc.file, tc.resource, tc.field)
				}
				if !found {
					t.Errorf("no error result names %q, %q and %q:\n%s", tc.file, tc.resource, tc.field, strings.Join(results, "\n"))
				}
				for _, part := range tc.also {
					if !strings.Contains(strings.Join(results, "\n"), part) {
						t.Errorf("the results do not mention %q:\n%s", part, strings.Join(results, "\n"))
					}
				}
			}
			checkStderr(t, tc, stderr.String())
		})
	}
}

// checkUnchanged: stdout is a ResourceList whose items are the input's.
func checkUnchanged(t *testing.T, input, stdout []byte) {
	t.Helper()
	want, got := noopItems(t, input), itemStrings(t, stdout)
	if len(want) != len(got) {
		t.Fatalf("%d items in, %d out", len(want), len(got))
	}
	for i := range want {
		if want[i] != got[i] {
			t.Errorf("item %d changed:\n--- in\n%.2000s--- out\n%.2000s", i, want[i], got[i])
		}
	}
}

// checkStderr: one stderr line, in words, names the file, the resource and
// the field; the rest of the fragments appear somewhere.
func checkStderr(t *testing.T, tc badCase, stderr string) {
	t.Helper()
	var errLines []string
	for _, l := range strings.Split(stderr, "\n") {
		if strings.Contains(l, "error") {
			errLines = append(errLines, l)
		}
	}
	if len(errLines) == 0 {
		t.Fatalf("no error line on stderr:\n%s", stderr)
	}
	if tc.count > 0 && len(errLines) < tc.count {
		t.Errorf("%d error lines on stderr, want %d (every problem, not just the first):\n%s", len(errLines), tc.count, stderr)
	}
	found := false
	for _, l := range errLines {
		found = found || containsAll(l, tc.file, tc.resource, tc.field)
	}
	if !found {
		t.Errorf("no stderr error line names %q, %q and %q:\n%s", tc.file, tc.resource, tc.field, stderr)
	}
	for _, part := range tc.also {
		if !strings.Contains(stderr, part) {
			t.Errorf("stderr does not mention %q:\n%s", part, stderr)
		}
	}
}

func putFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func getFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestFunctionModeTouchesNoFiles: function mode only uses its streams. The
// built binary runs under strace in a directory holding a package: it may
// open the Go runtime's /proc and /sys files and its own executable, and
// must create, remove, rename and connect nothing.
func TestFunctionModeTouchesNoFiles(t *testing.T) {
	testenv.Slow(t, "builds the binary and runs it under strace")
	strace, err := exec.LookPath("strace")
	if err != nil {
		testenv.Missing(t, "strace", "Debian: apt-get install strace; .ci/run installs it")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "shard-router")
	build := exec.Command("go", "build", "-o", bin, "github.com/shard-router/shard-router/cmd/shard-router")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	work := t.TempDir()
	putFile(t, filepath.Join(work, "Kptfile"), "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata: {name: decoy}\n")
	putFile(t, filepath.Join(work, "shards.yaml"), "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: decoy}\ndata: {x: a=b}\n")
	before := listTree(t, work)
	for _, name := range []string{"valid.yaml", "invalid.yaml"} {
		t.Run(name, func(t *testing.T) {
			trace := filepath.Join(dir, name+".strace")
			cmd := exec.Command(strace, "-f", "-qq", "-o", trace, "-e", "trace=open,openat,openat2,creat,mkdir,mkdirat,unlink,unlinkat,rename,renameat,renameat2,link,symlink,chmod,fchmodat,truncate,connect,socket,bind", bin)
			cmd.Dir = work
			cmd.Stdin = strings.NewReader(fixture(t, name))
			var stdout bytes.Buffer
			cmd.Stdout = &stdout
			if err := cmd.Run(); err != nil && name == "valid.yaml" {
				t.Fatalf("%v", err)
			}
			if stdout.Len() == 0 {
				t.Fatal("no ResourceList on stdout")
			}
			calls := 0
			for _, line := range strings.Split(strings.TrimSpace(getFile(t, trace)), "\n") {
				call := line
				if f := strings.Fields(line); len(f) > 1 {
					call = strings.Join(f[1:], " ") // drop the pid
				}
				if strings.HasPrefix(call, "+++") || strings.HasPrefix(call, "---") || strings.HasPrefix(call, "<...") {
					continue
				}
				// "???( <detached ...>": a thread still inside a syscall (a
				// futex wait, say) when the process exited; strace never
				// learned which one, and it never returned. Not a call the
				// program made: the directory check below still sees any file.
				if strings.HasPrefix(call, "???(") && strings.Contains(call, "<detached ...>") {
					continue
				}
				calls++
				path := ""
				if i := strings.Index(call, `"`); i >= 0 {
					if j := strings.Index(call[i+1:], `"`); j >= 0 {
						path = call[i+1 : i+1+j]
					}
				}
				ok := (strings.HasPrefix(call, "openat(") || strings.HasPrefix(call, "open(")) && strings.Contains(call, "O_RDONLY") &&
					(strings.HasPrefix(path, "/proc/") || strings.HasPrefix(path, "/sys/") || path == bin)
				if !ok {
					t.Errorf("function mode made a file or network call: %s", call)
				}
			}
			if calls == 0 {
				t.Error("strace recorded no call at all (the Go runtime opens /proc files): the trace was not read")
			}
			if after := listTree(t, work); after != before {
				t.Errorf("function mode changed its working directory:\nbefore:\n%s\nafter:\n%s", before, after)
			}
		})
	}
}

// listTree lists every path under dir with its size and modification time.
func listTree(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s %d %s\n", path, info.Size(), info.ModTime().Format(time.RFC3339Nano))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}
