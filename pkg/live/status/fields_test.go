package status

import (
	"encoding/json"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	sigsyaml "sigs.k8s.io/yaml"
)

// decodeYAML decodes as the package side is decoded (YAML to JSON, then
// Kubernetes' unstructured decoder: int64 for integers).
func decodeYAML(t *testing.T, y string) map[string]any {
	t.Helper()
	j, err := sigsyaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(j); err != nil {
		t.Fatal(err)
	}
	return u.Object
}

// decodeJSON decodes as encoding/json does (float64 numbers), so the tests
// see both number types.
func decodeJSON(t *testing.T, y string) map[string]any {
	t.Helper()
	j, err := sigsyaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(j, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// A live Deployment as kube-apiserver returns it: defaulted everywhere.
const liveDeployment = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: alpha
  generation: 1
  resourceVersion: "812"
  uid: 0b1c
  annotations:
    config.k8s.io/owning-inventory: abc
    deployment.kubernetes.io/revision: "1"
spec:
  replicas: 0
  progressDeadlineSeconds: 600
  revisionHistoryLimit: 10
  selector: {matchLabels: {app: web}}
  strategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 25%, maxUnavailable: 25%}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: nginx:1.27
        imagePullPolicy: IfNotPresent
        ports: [{containerPort: 80, protocol: TCP}]
        resources: {}
        terminationMessagePath: /dev/termination-log
      dnsPolicy: ClusterFirst
      restartPolicy: Always
status:
  observedGeneration: 1
`

func TestCovers(t *testing.T) {
	live := decodeJSON(t, liveDeployment)
	for _, tc := range []struct {
		name string
		pkg  string
		want bool
	}{
		{"the package as applied: defaults are not compared", `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: alpha, annotations: {config.k8s.io/owning-inventory: abc}}
spec:
  replicas: 0
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - {name: web, image: "nginx:1.27", ports: [{containerPort: 80}]}
`, true},
		{"status is never compared", "kind: Deployment\nstatus: {replicas: 3}", true},
		{"a changed image", `
kind: Deployment
spec: {template: {spec: {containers: [{name: web, image: "nginx:1.28"}]}}}`, false},
		{"a number", "kind: Deployment\nspec: {replicas: 2}", false},
		{"the same number as a string", "kind: Deployment\nspec: {replicas: \"0\"}", false},
		{"a field the cluster lacks", "kind: Deployment\nspec: {paused: false}", false},
		{"a list of another length", `
kind: Deployment
spec: {template: {spec: {containers: [{name: web}, {name: sidecar}]}}}`, false},
		{"a map where the cluster has a scalar", "kind: Deployment\nspec: {replicas: {a: 1}}", false},
		{"another owning inventory", "kind: Deployment\nmetadata: {annotations: {config.k8s.io/owning-inventory: xyz}}", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := covers(live, decodeYAML(t, tc.pkg)); got != tc.want {
				t.Errorf("covers = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestChangedFields(t *testing.T) {
	live := decodeJSON(t, `
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: alpha
  resourceVersion: "900"
  managedFields: [{manager: kubectl, operation: Update}]
  annotations: {kubectl.kubernetes.io/last-applied-configuration: "{old}", team: a}
data: {color: red, size: "3", app.properties: "x=1"}
binaryData: {}
`)
	for _, tc := range []struct {
		name  string
		after string
		want  []string
	}{
		{"nothing but bookkeeping", `
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: alpha
  resourceVersion: "901"
  generation: 2
  managedFields: [{manager: kubectl, operation: Apply}]
  annotations: {kubectl.kubernetes.io/last-applied-configuration: "{new}", team: a}
data: {color: red, size: "3", app.properties: "x=1"}
binaryData: {}
`, nil},
		{"a value, a key with a dot, a new key and an annotation", `
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: alpha
  annotations: {team: b}
data: {color: blue, size: "3", app.properties: "x=2", extra: "1"}
binaryData: {}
`, []string{"data.color", "data.extra", `data["app.properties"]`, "metadata.annotations.team"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := changedFields(live, decodeYAML(t, tc.after))
			if !slices.Equal(got, tc.want) {
				t.Errorf("changedFields = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestChangedFieldsLists(t *testing.T) {
	live := decodeJSON(t, `
kind: Deployment
spec: {template: {spec: {containers: [{name: web, image: a, ports: [{containerPort: 80}]}]}}}
status: {replicas: 1}
`)
	for _, tc := range []struct {
		name, after string
		want        []string
	}{
		{"an element's field", `
kind: Deployment
spec: {template: {spec: {containers: [{name: web, image: b, ports: [{containerPort: 80}]}]}}}
status: {replicas: 3}
`, []string{"spec.template.spec.containers[0].image"}},
		{"a list that grows", `
kind: Deployment
spec: {template: {spec: {containers: [{name: web, image: a, ports: [{containerPort: 80}]}, {name: b}]}}}
`, []string{"spec.template.spec.containers"}},
		{"a subtree that appears", `
kind: Deployment
spec: {paused: true, template: {spec: {containers: [{name: web, image: a, ports: [{containerPort: 80}]}]}}}
`, []string{"spec.paused"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := changedFields(live, decodeYAML(t, tc.after)); !slices.Equal(got, tc.want) {
				t.Errorf("changedFields = %q, want %q", got, tc.want)
			}
		})
	}
}
