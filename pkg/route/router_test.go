package route

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
)

// The objects of the tests. Namespaces: team-a is shard 00, team-b shard
// 01, team-e is only labelled tier=edge, team-x has no labels.
func ns(name string, labels map[string]string) Object {
	return Object{APIVersion: "v1", Kind: "Namespace", Name: name, Labels: labels}
}

func cm(namespace, name string, labels map[string]string) Object {
	return Object{APIVersion: "v1", Kind: "ConfigMap", Namespace: namespace, Name: name, Labels: labels}
}

func clusterRole(name string, labels map[string]string) Object {
	return Object{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Name: name, Labels: labels}
}

func crd(group, kind, scope string) Object {
	return Object{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition",
		Name: strings.ToLower(kind) + "s." + group, CRD: &CRD{Group: group, Kind: kind, Scope: scope}}
}

func prev(o Object, contexts ...string) Object {
	o.Previous, o.HasPrevious = contexts, true
	return o
}

func shard(v string) map[string]string { return map[string]string{"shard": v} }

func matchLabels(kv ...string) *metav1.LabelSelector {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return &metav1.LabelSelector{MatchLabels: m}
}

// baseSpec: c00 and c01 by namespace shard label, edge by the resource's own
// tier label.
func baseSpec() v1alpha1.ShardConfigSpec {
	return v1alpha1.ShardConfigSpec{Contexts: []v1alpha1.Context{
		{Name: "c00", NamespaceSelector: matchLabels("shard", "00")},
		{Name: "c01", NamespaceSelector: matchLabels("shard", "01")},
		{Name: "edge", ResourceSelector: matchLabels("tier", "edge")},
	}}
}

// want is the expected decision of one object: its contexts joined in
// annotation form ("" when it gets none), and why.
type want struct {
	contexts string
	reason   Reason
}

// wantProblem is an expected problem about object obj, whose message must
// contain every fragment of text.
type wantProblem struct {
	obj   int
	sev   Severity
	field string
	text  []string
}

const ctxField = "metadata.annotations[shardrouter.dev/context]"

func TestRoute(t *testing.T) {
	cases := []struct {
		name     string
		spec     func(*v1alpha1.ShardConfigSpec) // changes to baseSpec
		config   *Ref                            // the function config's identity
		objs     []Object
		want     []want
		problems []wantProblem
	}{
		// Rule neverRouted: never routed, never changed.
		{
			name: "neverRouted: local config, Kptfile, ShardConfig and inventory are not routed",
			objs: []Object{
				{APIVersion: "v1", Kind: "ConfigMap", Namespace: "team-a", Name: "setters", LocalConfig: true, Labels: map[string]string{"tier": "edge"}},
				{APIVersion: "kpt.dev/v1", Kind: "Kptfile", Name: "pkg", Labels: map[string]string{"tier": "edge"}},
				{APIVersion: "kpt.dev/v1alpha1", Kind: "ResourceGroup", Namespace: "team-a", Name: "inventory"},
				{APIVersion: "shardrouter.dev/v1alpha1", Kind: "ShardConfig", Name: "shards"},
				// local config is never routed, even a Namespace with a previous placement
				prev(Object{APIVersion: "v1", Kind: "Namespace", Name: "team-a", Labels: shard("00"), LocalConfig: true}, "c01"),
			},
			want: []want{{"", NotRouted}, {"", NotRouted}, {"", NotRouted}, {"", NotRouted}, {"", NotRouted}},
		},
		{
			name:   "neverRouted: the function config's own copy is not routed, another object of its kind is",
			config: &Ref{APIVersion: "v1", Kind: "ConfigMap", Name: "function-input"},
			objs: []Object{
				cm("", "function-input", nil),
				{APIVersion: "v1", Kind: "ConfigMap", Namespace: "team-x", Name: "other", Labels: map[string]string{"tier": "edge"}},
			},
			want: []want{{"", NotRouted}, {"edge", Selected}},
		},
		{
			name: "neverRouted: an object named Kptfile outside kpt.dev is routed",
			objs: []Object{{APIVersion: "example.com/v1", Kind: "Kptfile", Name: "pkg"}},
			want: []want{{"c00,c01,edge", Broadcast}},
			problems: []wantProblem{{obj: 0, sev: Warning, field: "metadata.namespace",
				text: []string{"Kptfile pkg", "a guess", "CustomResourceDefinition"}}},
		},

		// Rule selected: the selectors.
		{
			name: "selected: a Namespace is matched by both selectors against its own labels",
			objs: []Object{
				ns("team-a", shard("00")),
				ns("team-b", map[string]string{"shard": "01", "tier": "edge"}),
				ns("team-e", map[string]string{"tier": "edge"}),
			},
			want: []want{{"c00", Selected}, {"c01,edge", Selected}, {"edge", Selected}},
		},
		{
			name: "selected: resources are matched by their Namespace's labels and their own",
			objs: []Object{
				ns("team-a", map[string]string{"shard": "00", "tier": "edge"}),
				cm("team-a", "plain", nil),
				cm("team-a", "edgy", map[string]string{"tier": "edge"}),
				cm("team-a", "labelled-like-another-shard", shard("01")),
			},
			want: []want{{"c00,edge", Selected}, {"c00", Selected}, {"c00,edge", Selected}, {"c00", Selected}},
		},
		{
			name: "selected: without its Namespace in the package, no namespaceSelector matches",
			spec: func(s *v1alpha1.ShardConfigSpec) {
				s.Contexts[0].NamespaceSelector = &metav1.LabelSelector{} // {} would match any Namespace
			},
			objs: []Object{
				cm("elsewhere", "edgy", map[string]string{"tier": "edge"}),
				cm("elsewhere", "lost", shard("00")),
			},
			want: []want{{"edge", Selected}, {"", Failed}},
			problems: []wantProblem{{obj: 1, sev: Error, field: "metadata.namespace",
				text: []string{"ConfigMap elsewhere/lost", `Namespace "elsewhere" is not in the package`, "defaultContext"}}},
		},
		{
			name: "selected: an absent selector matches nothing, {} matches everything",
			spec: func(s *v1alpha1.ShardConfigSpec) {
				s.Contexts = []v1alpha1.Context{
					{Name: "none"},
					{Name: "all-ns", NamespaceSelector: &metav1.LabelSelector{}},
					{Name: "all-res", ResourceSelector: &metav1.LabelSelector{}},
				}
			},
			objs: []Object{
				ns("team-x", nil),
				cm("team-x", "a", nil),
				cm("elsewhere", "b", nil),
				clusterRole("r", map[string]string{"any": "thing"}),
			},
			want: []want{{"all-ns,all-res", Selected}, {"all-ns,all-res", Selected}, {"all-res", Selected}, {"all-res", Selected}},
		},
		{
			name: "selected: matchExpressions",
			spec: func(s *v1alpha1.ShardConfigSpec) {
				s.Contexts = []v1alpha1.Context{
					{Name: "low", NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
						{Key: "shard", Operator: metav1.LabelSelectorOpIn, Values: []string{"00", "01"}}}}},
					{Name: "unsharded", NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
						{Key: "shard", Operator: metav1.LabelSelectorOpDoesNotExist}}}},
				}
			},
			objs: []Object{ns("a", shard("01")), ns("b", nil), ns("c", shard("02"))},
			want: []want{{"low", Selected}, {"unsharded", Selected}, {"", Failed}},
			problems: []wantProblem{{obj: 2, sev: Error, field: "metadata.labels",
				text: []string{"Namespace c", "no selector matches its labels"}}},
		},
		{
			name: "annotation order is config order, whatever matched first",
			spec: func(s *v1alpha1.ShardConfigSpec) {
				// edge first: its resourceSelector comes before the namespaceSelectors.
				s.Contexts = []v1alpha1.Context{s.Contexts[2], s.Contexts[1], s.Contexts[0]}
			},
			objs: []Object{
				ns("team-a", map[string]string{"shard": "00", "tier": "edge"}),
				cm("team-a", "edgy", map[string]string{"tier": "edge"}),
				prev(cm("elsewhere", "pinned", nil), "c00", "edge"),
				clusterRole("reader", nil),
			},
			want: []want{{"edge,c00", Selected}, {"edge,c00", Selected}, {"edge,c00", Sticky}, {"edge,c01,c00", Broadcast}},
		},

		// Rules followsNamespace and namespaceFailed, and the namespaceConsistency
		// check: follow the Namespace, and never go where it does not.
		{
			name: "followsNamespace: unmatched resources follow their Namespace however it was placed",
			spec: func(s *v1alpha1.ShardConfigSpec) { s.DefaultContext = "c01" },
			objs: []Object{
				ns("team-e", map[string]string{"tier": "edge"}), // by resourceSelector only
				cm("team-e", "follows-selected", nil),
				prev(ns("team-s", nil), "c00"), // sticky
				cm("team-s", "follows-sticky", nil),
				ns("team-d", nil), // defaultContext
				cm("team-d", "follows-default", nil),
			},
			want: []want{
				{"edge", Selected}, {"edge", FollowsNamespace},
				{"c00", Sticky}, {"c00", FollowsNamespace},
				{"c01", Default}, {"c01", FollowsNamespace},
			},
		},
		{
			name: "namespaceConsistency: a resource selected to a context its Namespace does not go to is an error naming both",
			objs: []Object{
				ns("team-a", shard("00")),
				cm("team-a", "edgy", map[string]string{"tier": "edge"}),
				cm("team-a", "fine", nil),
			},
			want: []want{{"c00", Selected}, {"", Failed}, {"c00", Selected}},
			problems: []wantProblem{{obj: 1, sev: Error, field: "metadata.labels",
				text: []string{"ConfigMap team-a/edgy", `would go to "edge"`, `Namespace "team-a" goes only to "c00"`}}},
		},
		{
			name:     "namespaceFailed: resources of a Namespace that failed fail with it, reported once",
			objs:     []Object{ns("team-x", nil), cm("team-x", "a", nil), cm("team-x", "b", nil)},
			want:     []want{{"", Failed}, {"", Failed}, {"", Failed}},
			problems: []wantProblem{{obj: 0, sev: Error, field: "metadata.labels", text: []string{"Namespace team-x"}}},
		},

		// Rule broadcast: cluster-scoped resources, and scope.
		{
			name: "broadcast: unmatched cluster-scoped resources go to every context",
			objs: []Object{
				clusterRole("reader", nil),
				crd("example.com", "Widget", "Namespaced"),
				{APIVersion: "storage.k8s.io/v1", Kind: "StorageClass", Name: "fast"},
				clusterRole("edge-only", map[string]string{"tier": "edge"}),
			},
			want: []want{{"c00,c01,edge", Broadcast}, {"c00,c01,edge", Broadcast}, {"c00,c01,edge", Broadcast}, {"edge", Selected}},
		},
		{
			name: "broadcast: scope of custom resources from the package's CRDs",
			objs: []Object{
				ns("team-a", shard("00")),
				crd("example.com", "Widget", "Namespaced"),
				crd("example.com", "Gadget", "Cluster"),
				{APIVersion: "example.com/v1", Kind: "Widget", Namespace: "team-a", Name: "w"},
				// a cluster-scoped CR with a stray namespace is refused (kpt live apply refuses it)
				{APIVersion: "example.com/v1", Kind: "Gadget", Namespace: "team-a", Name: "g"},
				// the CRD's scope wins over a missing namespace
				{APIVersion: "example.com/v1beta1", Kind: "Widget", Name: "no-namespace"},
				{APIVersion: "example.com/v1", Kind: "Gadget", Name: "h"},
			},
			want: []want{{"c00", Selected}, {"c00,c01,edge", Broadcast}, {"c00,c01,edge", Broadcast},
				{"c00", Selected}, {"", Failed}, {"", Failed}, {"c00,c01,edge", Broadcast}},
			problems: []wantProblem{
				{obj: 4, sev: Error, field: "metadata.namespace", text: []string{`Gadget team-a/g is cluster-scoped but has metadata.namespace "team-a"`, "remove metadata.namespace"}},
				{obj: 5, sev: Error, field: "metadata.namespace", text: []string{"Widget no-namespace", "metadata.namespace"}},
			},
		},
		{
			name: "broadcast: without a CRD, scope comes from metadata.namespace",
			objs: []Object{
				ns("team-b", shard("01")),
				{APIVersion: "example.com/v1", Kind: "Thing", Namespace: "team-b", Name: "namespaced"},
				{APIVersion: "example.com/v1", Kind: "Thing", Name: "cluster-scoped"},
			},
			want: []want{{"c01", Selected}, {"c01", Selected}, {"c00,c01,edge", Broadcast}},
			problems: []wantProblem{{obj: 2, sev: Warning, field: "metadata.namespace",
				text: []string{"Thing cluster-scoped", "example.com/v1 Thing", "a guess", "add the kind's CustomResourceDefinition", "set metadata.namespace", "resourceSelector"}}},
		},
		{
			name: "broadcast: one scope-guess warning per kind, none when a selector pins it",
			objs: []Object{
				{APIVersion: "example.com/v1", Kind: "Thing", Name: "a"},
				{APIVersion: "example.com/v1", Kind: "Thing", Name: "b"},
				{APIVersion: "example.com/v1", Kind: "Thing", Name: "pinned", Labels: map[string]string{"tier": "edge"}},
				{APIVersion: "example.com/v2", Kind: "Other", Name: "c"},
			},
			want: []want{{"c00,c01,edge", Broadcast}, {"c00,c01,edge", Broadcast}, {"edge", Selected}, {"c00,c01,edge", Broadcast}},
			problems: []wantProblem{
				{obj: 0, sev: Warning, field: "metadata.namespace", text: []string{"Thing a (and 1 more Thing)"}},
				{obj: 3, sev: Warning, field: "metadata.namespace", text: []string{"Other c", "example.com/v2 Other"}},
			},
		},
		{
			name: "broadcast: a version 1.34 does not serve has its kind's scope, with a warning naming the served version",
			objs: []Object{
				ns("team-b", shard("01")),
				// namespaced in every version: without metadata.namespace it is no broadcast
				{APIVersion: "batch/v1beta1", Kind: "CronJob", Name: "no-namespace"},
				{APIVersion: "batch/v1beta1", Kind: "CronJob", Namespace: "team-b", Name: "nightly"},
				{APIVersion: "policy/v1beta1", Kind: "PodSecurityPolicy", Name: "restricted"},
				{APIVersion: "extensions/v1beta1", Kind: "Ingress", Namespace: "team-b", Name: "web"},
				{APIVersion: "flowcontrol.apiserver.k8s.io/v1beta2", Kind: "FlowSchema", Name: "fs"},
				// a kind only older releases served (generated from k8s.io/api): namespaced, so no broadcast
				{APIVersion: "resource.k8s.io/v1alpha2", Kind: "ResourceClaimParameters", Name: "params"},
			},
			want: []want{{"c01", Selected}, {"", Failed}, {"c01", Selected}, {"c00,c01,edge", Broadcast}, {"c01", Selected}, {"c00,c01,edge", Broadcast}, {"", Failed}},
			problems: []wantProblem{
				// one warning per apiVersion and kind, counting and naming its objects
				{obj: 1, sev: Warning, field: "apiVersion", text: []string{"2 objects (CronJob no-namespace, CronJob team-b/nightly): Kubernetes 1.34 does not serve batch/v1beta1 CronJob; write apiVersion: batch/v1"}},
				{obj: 3, sev: Warning, field: "apiVersion", text: []string{"PodSecurityPolicy restricted", "no version of PodSecurityPolicy"}},
				{obj: 4, sev: Warning, field: "apiVersion", text: []string{"Ingress team-b/web", "write apiVersion: networking.k8s.io/v1"}},
				{obj: 5, sev: Warning, field: "apiVersion", text: []string{"flowcontrol.apiserver.k8s.io/v1"}},
				{obj: 6, sev: Warning, field: "apiVersion", text: []string{"ResourceClaimParameters params", "no version of ResourceClaimParameters exists any more"}},
				{obj: 1, sev: Error, field: "metadata.namespace", text: []string{"CronJob no-namespace", "namespaced but has no metadata.namespace"}},
				{obj: 6, sev: Error, field: "metadata.namespace", text: []string{"ResourceClaimParameters params", "namespaced but has no metadata.namespace"}},
			},
		},
		{
			name: "broadcast: many objects of an old version: one warning, naming the first ten",
			objs: func() []Object {
				objs := []Object{ns("team-b", shard("01"))}
				for _, n := range strings.Fields("a b c d e f g h i j k l") {
					objs = append(objs, Object{APIVersion: "batch/v1beta1", Kind: "CronJob", Namespace: "team-b", Name: n})
				}
				return append(objs, Object{APIVersion: "batch/v1", Kind: "CronJob", Namespace: "team-b", Name: "served"})
			}(),
			want: []want{{"c01", Selected}, {"c01", Selected}, {"c01", Selected}, {"c01", Selected}, {"c01", Selected}, {"c01", Selected},
				{"c01", Selected}, {"c01", Selected}, {"c01", Selected}, {"c01", Selected}, {"c01", Selected}, {"c01", Selected}, {"c01", Selected}, {"c01", Selected}},
			problems: []wantProblem{
				{obj: 1, sev: Warning, field: "apiVersion", text: []string{"12 objects (CronJob team-b/a, CronJob team-b/b,", "CronJob team-b/j and 2 more): Kubernetes 1.34 does not serve batch/v1beta1 CronJob"}},
			},
		},
		{
			name: "broadcast: the built-in table wins over metadata.namespace and over CRDs",
			objs: []Object{
				ns("team-b", shard("01")),
				// ClusterRole is cluster-scoped: its labels do not make it follow team-b
				{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Name: "stray", Labels: shard("01")},
				// a CRD cannot make a built-in kind cluster-scoped
				crd("apps", "Deployment", "Cluster"),
				{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "team-b", Name: "web"},
			},
			want: []want{{"c01", Selected}, {"c00,c01,edge", Broadcast}, {"c00,c01,edge", Broadcast}, {"c01", Selected}},
		},
		{
			name: "a cluster-scoped object with metadata.namespace is refused by name, and is one object with its copy without",
			objs: []Object{
				ns("team-b", shard("01")),
				{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Namespace: "team-b", Name: "stray"},
				{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Name: "stray"},
				{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Name: "twice"},
				{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Namespace: "team-b", Name: "twice"},
				{APIVersion: "v1", Kind: "Namespace", Namespace: "team-b", Name: "nested"},
			},
			want: []want{{"c01", Selected}, {"", Failed}, {"", Failed}, {"c00,c01,edge", Broadcast}, {"", Failed}, {"", Failed}},
			problems: []wantProblem{
				{obj: 1, sev: Error, field: "metadata.namespace", text: []string{`ClusterRole team-b/stray is cluster-scoped but has metadata.namespace "team-b": kpt live apply refuses it`}},
				{obj: 2, sev: Error, field: "metadata.name", text: []string{"ClusterRole stray is in the package twice (first at item 1)"}},
				{obj: 4, sev: Error, field: "metadata.name", text: []string{"ClusterRole team-b/twice is in the package twice (first at item 3)"}},
				{obj: 5, sev: Error, field: "metadata.namespace", text: []string{`Namespace team-b/nested is cluster-scoped`}},
			},
		},

		// Admission (pass 1): one stored object, lists.
		{
			name: "one stored object reached through two API groups is a duplicate",
			objs: []Object{
				{APIVersion: "v1", Kind: "Event", Namespace: "team-x", Name: "e", Labels: map[string]string{"tier": "edge"}},
				{APIVersion: "events.k8s.io/v1", Kind: "Event", Namespace: "team-x", Name: "e", Labels: map[string]string{"tier": "edge"}},
				{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "team-x", Name: "web", Labels: map[string]string{"tier": "edge"}},
				{APIVersion: "extensions/v1beta1", Kind: "Deployment", Namespace: "team-x", Name: "web", Labels: map[string]string{"tier": "edge"}},
				{APIVersion: "events.k8s.io/v1", Kind: "Event", Namespace: "team-y", Name: "e", Labels: map[string]string{"tier": "edge"}},
			},
			want: []want{{"edge", Selected}, {"", Failed}, {"edge", Selected}, {"", Failed}, {"edge", Selected}},
			problems: []wantProblem{
				{obj: 1, sev: Error, field: "apiVersion", text: []string{"events.k8s.io/v1 Event team-x/e and v1 Event team-x/e (item 0) are one object", "/events"}},
				{obj: 3, sev: Error, field: "apiVersion", text: []string{"extensions/v1beta1 Deployment team-x/web and apps/v1 Deployment team-x/web (item 2)", "apps/deployments"}},
				// version warnings come after the identity checks, one per apiVersion and kind
				{obj: 3, sev: Warning, field: "apiVersion", text: []string{"apps/v1"}},
			},
		},
		{
			name: "a List is refused as a list, not as a nameless resource",
			objs: []Object{
				{APIVersion: "v1", Kind: "List", List: true},
				{APIVersion: "v1", Kind: "ConfigMapList", List: true},
			},
			want: []want{{"", Failed}, {"", Failed}},
			problems: []wantProblem{
				{obj: 0, sev: Error, field: "kind", text: []string{"v1 List is a list of resources", "kpt does not unwrap Lists (kubectl does)", "resource of its own"}},
				{obj: 1, sev: Error, field: "kind", text: []string{"v1 ConfigMapList"}},
			},
		},

		// Rules sticky, defaultContext and noContext (placed: placement_test.go).
		{
			name: "sticky: an annotation is kept when nothing decides",
			spec: func(s *v1alpha1.ShardConfigSpec) { s.DefaultContext = "c00" },
			objs: []Object{
				prev(cm("elsewhere", "pinned", nil), "c01"),
				prev(cm("elsewhere", "pinned-twice", nil), "edge", "c01"),
				cm("elsewhere", "defaulted", nil),
			},
			want: []want{{"c01", Sticky}, {"c01,edge", Sticky}, {"c00", Default}},
		},
		{
			name: "sticky: a sticky annotation must name declared contexts",
			objs: []Object{prev(cm("elsewhere", "pinned", nil), "c01", "c09")},
			want: []want{{"", Failed}},
			problems: []wantProblem{{obj: 0, sev: Error, field: ctxField,
				text: []string{"ConfigMap elsewhere/pinned", `"c09"`}}},
		},
		{
			name: "noContext: nothing decides: an error naming the resource",
			objs: []Object{cm("elsewhere", "lost", nil), ns("team-x", nil)},
			want: []want{{"", Failed}, {"", Failed}},
			problems: []wantProblem{
				// Namespaces are decided first.
				{obj: 1, sev: Error, field: "metadata.labels", text: []string{"Namespace team-x", "no context"}},
				{obj: 0, sev: Error, field: "metadata.namespace", text: []string{"ConfigMap elsewhere/lost", "no context", `Namespace "elsewhere" is not in the package`}},
			},
		},
		{
			name: "noContext: a namespaced resource without metadata.namespace",
			objs: []Object{
				cm("", "edgy", map[string]string{"tier": "edge"}),
				prev(cm("", "pinned", nil), "c01"),
				cm("", "lost", nil),
			},
			want: []want{{"edge", Selected}, {"c01", Sticky}, {"", Failed}},
			problems: []wantProblem{{obj: 2, sev: Error, field: "metadata.namespace",
				text: []string{"ConfigMap lost", "metadata.namespace"}}},
		},
		{
			name: "defaultContext: defaultContext places a namespace-less namespaced resource",
			spec: func(s *v1alpha1.ShardConfigSpec) { s.DefaultContext = "c01" },
			objs: []Object{cm("", "lost", nil)},
			want: []want{{"c01", Default}},
		},

		// Check moves.
		{
			name: "moves: keeping or adding contexts is not a move",
			objs: []Object{
				prev(ns("team-a", shard("00")), "c00"),
				prev(clusterRole("reader", nil), "c00"),
				prev(cm("team-a", "x", nil), "c00"),
			},
			want: []want{{"c00", Selected}, {"c00,c01,edge", Broadcast}, {"c00", Selected}},
		},
		{
			name: "moves: every refused move is reported, naming old and new contexts",
			objs: []Object{
				prev(ns("team-a", shard("00")), "c01"),
				prev(clusterRole("edge-only", map[string]string{"tier": "edge"}), "c00", "c01", "edge"),
				ns("team-b", shard("01")),
				prev(cm("team-b", "was-elsewhere", nil), "c00"),
			},
			want: []want{{"", Failed}, {"", Failed}, {"c01", Selected}, {"", Failed}},
			problems: []wantProblem{
				{obj: 0, sev: Error, field: ctxField, text: []string{"Namespace team-a", `from "c01" to "c00"`, "allowMoves"}},
				{obj: 1, sev: Error, field: ctxField, text: []string{"ClusterRole edge-only", `from "c00,c01,edge" to "edge"`}},
				{obj: 3, sev: Error, field: ctxField, text: []string{"ConfigMap team-b/was-elsewhere", `from "c00" to "c01"`}},
			},
		},
		{
			name: "moves: one refusal per cause: a relabelled Namespace's error counts and names the objects that would move with it",
			objs: []Object{
				prev(ns("team-a", shard("00")), "c01"),
				prev(cm("team-a", "a", nil), "c01"),
				prev(cm("team-a", "b", nil), "c01"),
				cm("team-a", "new", nil), // no previous context: no move of its own
				prev(cm("team-b", "other", nil), "c00"),
				ns("team-b", shard("01")),
			},
			want: []want{{"", Failed}, {"", Failed}, {"", Failed}, {"", Failed}, {"", Failed}, {"c01", Selected}},
			problems: []wantProblem{
				{obj: 0, sev: Error, field: ctxField, text: []string{`Namespace team-a would move from "c01" to "c00" with 2 objects (ConfigMap team-a/a, ConfigMap team-a/b) in it: kpt live apply --context c01 would delete them there`}},
				{obj: 4, sev: Error, field: ctxField, text: []string{`ConfigMap team-b/other would move from "c00" to "c01": kpt live apply --context c00 would delete it there`}},
			},
		},
		{
			name:     "moves: a context removed from the config is a move",
			objs:     []Object{prev(clusterRole("reader", nil), "c00", "c-old")},
			want:     []want{{"", Failed}},
			problems: []wantProblem{{obj: 0, sev: Error, field: ctxField, text: []string{`from "c00,c-old" to "c00,c01,edge"`, "c-old"}}},
		},
		{
			name: "moves: allowMoves turns each move into a warning",
			spec: func(s *v1alpha1.ShardConfigSpec) { s.AllowMoves = true },
			objs: []Object{
				prev(ns("team-a", shard("00")), "c01"),
				prev(cm("team-a", "x", nil), "c01", "edge"),
			},
			want: []want{{"c00", Selected}, {"c00", Selected}},
			problems: []wantProblem{
				{obj: 0, sev: Warning, field: ctxField, text: []string{"Namespace team-a", `from "c01" to "c00"`}},
				{obj: 1, sev: Warning, field: ctxField, text: []string{"ConfigMap team-a/x", `from "c01,edge" to "c00"`}},
			},
		},

		// Admission (pass 1): identity.
		{
			name:     "the same object twice is an error",
			objs:     []Object{ns("team-a", shard("00")), ns("team-a", shard("00"))},
			want:     []want{{"c00", Selected}, {"", Failed}},
			problems: []wantProblem{{obj: 1, sev: Error, field: "metadata.name", text: []string{"Namespace team-a", "twice"}}},
		},
		{
			name: "objects without apiVersion, kind or name are errors",
			objs: []Object{{Kind: "ConfigMap", Name: "a"}, {APIVersion: "v1", Name: "b"}, {APIVersion: "v1", Kind: "ConfigMap"}},
			want: []want{{"", Failed}, {"", Failed}, {"", Failed}},
			problems: []wantProblem{
				{obj: 0, sev: Error, field: "apiVersion"},
				{obj: 1, sev: Error, field: "kind"},
				{obj: 2, sev: Error, field: "metadata.name"},
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := &v1alpha1.ShardConfig{Spec: baseSpec()}
			cfg.APIVersion, cfg.Kind, cfg.Name = v1alpha1.APIVersion, v1alpha1.Kind, "shards"
			if tc.spec != nil {
				tc.spec(&cfg.Spec)
			}
			if errs := cfg.Validate(); len(errs) > 0 {
				t.Fatalf("test config is invalid: %v", errs)
			}
			r := mustRouter(t, cfg)
			if tc.config != nil {
				r.WithConfigRef(*tc.config)
			}
			plan := r.Route(tc.objs)
			if len(plan.Decisions) != len(tc.objs) {
				t.Fatalf("%d decisions for %d objects", len(plan.Decisions), len(tc.objs))
			}
			for i, w := range tc.want {
				d := plan.Decisions[i]
				got := ""
				if d.Routed() {
					got = strings.Join(r.cfg.NamesOf(d.Contexts), ",")
				}
				if got != w.contexts || d.Reason != w.reason {
					t.Errorf("object %d (%s %s): got %q (%v), want %q (%v)", i, tc.objs[i].Kind, tc.objs[i].Name, got, d.Reason, w.contexts, w.reason)
				}
			}
			checkProblems(t, plan.Problems, tc.problems)
		})
	}
}

// checkProblems requires exactly the wanted problems, in order.
func checkProblems(t *testing.T, got []Problem, want []wantProblem) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("got %d problems, want %d:", len(got), len(want))
		for _, p := range got {
			t.Logf("  object %d, severity %d, %s: %s", p.Object, p.Severity, p.Field, p.Message)
		}
		return
	}
	for i, w := range want {
		p := got[i]
		if p.Object != w.obj || p.Severity != w.sev || (w.field != "" && p.Field != w.field) {
			t.Errorf("problem %d: object %d, severity %d, field %q; want object %d, severity %d, field %q (%s)",
				i, p.Object, p.Severity, p.Field, w.obj, w.sev, w.field, p.Message)
		}
		for _, frag := range w.text {
			if !strings.Contains(p.Message, frag) {
				t.Errorf("problem %d: %q does not mention %s", i, p.Message, frag)
			}
		}
	}
}

func TestRouteAllowedMoveRecordsDropped(t *testing.T) {
	cfg := &v1alpha1.ShardConfig{Spec: baseSpec()}
	cfg.Spec.AllowMoves = true
	r := mustRouter(t, cfg)
	plan := r.Route([]Object{prev(ns("team-a", shard("00")), "c01", "edge", "c00")})
	if got := strings.Join(plan.Decisions[0].Dropped, ","); got != "c01,edge" {
		t.Errorf("Dropped = %q, want \"c01,edge\"", got)
	}
}

func TestParseContexts(t *testing.T) {
	cases := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"  ", nil},
		{"c00", []string{"c00"}},
		{"c00,c01", []string{"c00", "c01"}},
		{" c00 , c01 ", []string{"c00", "c01"}},
		// blanks are kept so that the annotation is reported as malformed
		{"c00,", []string{"c00", ""}},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			got := ParseContexts(tc.in)
			if strings.Join(got, "|") != strings.Join(tc.want, "|") || len(got) != len(tc.want) {
				t.Errorf("ParseContexts(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

// TestReasonString pins the names that outputs print: they come from the
// line comments in reason.go, through stringer.
func TestReasonString(t *testing.T) {
	want := map[Reason]string{NotRouted: "not routed", Selected: "selected", FollowsNamespace: "follows its namespace",
		Broadcast: "broadcast", Placed: "placed", Sticky: "sticky", Default: "default context", Failed: "failed"}
	for r, s := range want {
		if r.String() != s {
			t.Errorf("%d.String() = %q, want %q", int(r), r.String(), s)
		}
	}
}
