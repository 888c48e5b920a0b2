package gate

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
)

// fakePrometheus answers /api/v1/query with body, and records the queries.
func fakePrometheus(t *testing.T, body string, queries *[]string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/query" {
			http.NotFound(w, r)
			return
		}
		if queries != nil {
			*queries = append(*queries, r.URL.Query().Get("query"))
		}
		fmt.Fprint(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func vector(values ...string) string {
	var samples []string
	for i, v := range values {
		samples = append(samples, fmt.Sprintf(`{"metric":{"i":"%d"},"value":[1700000000.1,"%s"]}`, i, v))
	}
	return `{"status":"success","data":{"resultType":"vector","result":[` + strings.Join(samples, ",") + `]}}`
}

func compile(t *testing.T, g v1alpha1.Gate) *Gate {
	t.Helper()
	if g.Name == "" {
		g.Name = "g"
	}
	c, err := Compile(g)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestPrometheusMeasure(t *testing.T) {
	both := v1alpha1.Gate{Prometheus: &v1alpha1.PrometheusGate{Query: `errors{cluster="{{.context}}",stage="{{.labels.stage}}"}`},
		SuccessCondition: "result < 0.01", FailureCondition: "result >= 0.05"}
	cases := []struct {
		name      string
		body      string
		gate      v1alpha1.Gate
		want      v1alpha1.GatePhase
		wantValue string
		wantMsg   string
	}{
		{name: "one-sample vector below", body: vector("0.001"), gate: both, want: v1alpha1.GateSuccessful, wantValue: "0.001"},
		{name: "one-sample vector above", body: vector("0.25"), gate: both, want: v1alpha1.GateFailed, wantValue: "0.25"},
		{name: "between the conditions", body: vector("0.02"), gate: both, want: v1alpha1.GateInconclusive},
		{name: "scalar", body: `{"status":"success","data":{"resultType":"scalar","result":[1700000000,"0"]}}`, gate: both, want: v1alpha1.GateSuccessful, wantValue: "0"},
		{name: "only success: false fails", body: vector("0.02"),
			gate: v1alpha1.Gate{Prometheus: &v1alpha1.PrometheusGate{Query: "q"}, SuccessCondition: "result < 0.01"}, want: v1alpha1.GateFailed},
		{name: "only failure: false passes", body: vector("0.02"),
			gate: v1alpha1.Gate{Prometheus: &v1alpha1.PrometheusGate{Query: "q"}, FailureCondition: "result > 0.05"}, want: v1alpha1.GateSuccessful},
		{name: "a longer vector is a list", body: vector("1", "2", "3"),
			gate: v1alpha1.Gate{Prometheus: &v1alpha1.PrometheusGate{Query: "q"}, SuccessCondition: "result.all(x, x < 5) && size(result) == 3"},
			want: v1alpha1.GateSuccessful, wantValue: "[1, 2, 3]"},
		{name: "empty vector is an error", body: vector(), gate: both, want: v1alpha1.GateError, wantMsg: "no sample"},
		{name: "NaN is an error", body: vector("NaN"), gate: both, want: v1alpha1.GateError, wantMsg: "NaN"},
		{name: "API error", body: `{"status":"error","errorType":"bad_data","error":"parse error"}`, gate: both, want: v1alpha1.GateError, wantMsg: "bad_data: parse error"},
		{name: "not the API", body: `<html>`, gate: both, want: v1alpha1.GateError, wantMsg: "not the Prometheus API"},
		{name: "a matrix is refused", body: `{"status":"success","data":{"resultType":"matrix","result":[]}}`, gate: both, want: v1alpha1.GateError, wantMsg: "matrix"},
		{name: "a condition over a list that wants a number", body: vector("1", "2"), gate: both, want: v1alpha1.GateError, wantMsg: "failureCondition"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var queries []string
			srv := fakePrometheus(t, tc.body, &queries)
			g := compile(t, tc.gate)
			m := g.Measure(context.Background(), Target{Context: "eu-0", Labels: map[string]string{"stage": "canary"},
				Endpoints: map[string]string{"prometheus": srv.URL + "/"}})
			if m.Phase != tc.want || (tc.wantValue != "" && m.Value != tc.wantValue) || !strings.Contains(m.Message, tc.wantMsg) {
				t.Errorf("measurement = %+v, want %s %q %q", m, tc.want, tc.wantValue, tc.wantMsg)
			}
			if tc.name == "one-sample vector below" && queries[0] != `errors{cluster="eu-0",stage="canary"}` {
				t.Errorf("query = %q: the placeholders were not expanded", queries[0])
			}
		})
	}
}

func TestUnreachableAndTimeoutAreErrors(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(300 * time.Millisecond)
		fmt.Fprint(w, vector("0"))
	}))
	defer srv.Close()
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	gate := v1alpha1.Gate{Prometheus: &v1alpha1.PrometheusGate{Query: "q"}, SuccessCondition: "result < 1"}
	for name, ep := range map[string]string{"timeout": srv.URL, "unreachable": closed.URL} {
		t.Run(name, func(t *testing.T) {
			g := compile(t, gate)
			g.Timeout = 50 * time.Millisecond
			m := g.Measure(context.Background(), Target{Context: "eu-0", Endpoints: map[string]string{"prometheus": ep}})
			if m.Phase != v1alpha1.GateError {
				t.Errorf("measurement = %+v, want an Error", m)
			}
		})
	}
}

func TestHTTPMeasure(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/eu-0/healthz":
			fmt.Fprint(w, `{"ok": true, "version": "v2"}`)
		case "/eu-0/down":
			w.WriteHeader(http.StatusServiceUnavailable)
		case "/eu-0/text":
			fmt.Fprint(w, "ok")
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	cases := []struct {
		name string
		gate v1alpha1.HTTPGate
		cond string
		want v1alpha1.GatePhase
	}{
		{name: "200 passes", gate: v1alpha1.HTTPGate{URL: srv.URL + "/{{.context}}/healthz"}, want: v1alpha1.GateSuccessful},
		{name: "503 fails", gate: v1alpha1.HTTPGate{URL: srv.URL + "/{{.context}}/down"}, want: v1alpha1.GateFailed},
		{name: "503 expected", gate: v1alpha1.HTTPGate{URL: srv.URL + "/{{.context}}/down", ExpectStatus: []int32{503}}, want: v1alpha1.GateSuccessful},
		{name: "body condition true", gate: v1alpha1.HTTPGate{URL: srv.URL + "/{{.context}}/healthz", SuccessCondition: `body.ok && body.version == "v2" && status == 200`}, want: v1alpha1.GateSuccessful},
		{name: "body condition false", gate: v1alpha1.HTTPGate{URL: srv.URL + "/{{.context}}/healthz", SuccessCondition: `body.version == "v3"`}, want: v1alpha1.GateFailed},
		{name: "gate-level failureCondition", gate: v1alpha1.HTTPGate{URL: srv.URL + "/{{.context}}/healthz"}, cond: `result.version == "v2"`, want: v1alpha1.GateFailed},
		{name: "not JSON with a condition", gate: v1alpha1.HTTPGate{URL: srv.URL + "/{{.context}}/text", SuccessCondition: `body.ok`}, want: v1alpha1.GateError},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := compile(t, v1alpha1.Gate{HTTP: &tc.gate, FailureCondition: tc.cond})
			m := g.Measure(context.Background(), Target{Context: "eu-0"})
			if m.Phase != tc.want {
				t.Errorf("measurement = %+v, want %s", m, tc.want)
			}
		})
	}
}

func TestKubernetesMeasure(t *testing.T) {
	gvk := schema.GroupVersionKind{Group: "flagger.app", Version: "v1beta1", Kind: "Canary"}
	gvr := schema.GroupVersionResource{Group: "flagger.app", Version: "v1beta1", Resource: "canaries"}
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(gvk, meta.RESTScopeNamespace)
	canary := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "flagger.app/v1beta1", "kind": "Canary",
		"metadata": map[string]any{"name": "api", "namespace": "web"},
		"status":   map[string]any{"phase": "Progressing", "failedChecks": int64(0)},
	}}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{gvr: "CanaryList"}, canary)
	spec := v1alpha1.KubernetesGate{APIVersion: "flagger.app/v1beta1", Kind: "Canary", Namespace: "web", Name: "api",
		SuccessCondition: `object.status.phase == "Succeeded"`, FailureCondition: `object.status.phase == "Failed" || (has(object.status.failedChecks) && object.status.failedChecks > 2)`}
	target := Target{Context: "eu-0", Dynamic: dyn, Mapper: mapper}
	g := compile(t, v1alpha1.Gate{Kubernetes: &spec})
	if m := g.Measure(context.Background(), target); m.Phase != v1alpha1.GateInconclusive || !strings.Contains(m.Value, "Progressing") {
		t.Errorf("Progressing: %+v, want Inconclusive", m)
	}
	canary.Object["status"] = map[string]any{"phase": "Succeeded"}
	if _, err := dyn.Resource(gvr).Namespace("web").Update(context.Background(), canary, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if m := g.Measure(context.Background(), target); m.Phase != v1alpha1.GateSuccessful {
		t.Errorf("Succeeded: %+v", m)
	}
	missing := spec
	missing.Name = "gone"
	if m := compile(t, v1alpha1.Gate{Kubernetes: &missing}).Measure(context.Background(), target); m.Phase != v1alpha1.GateError || !strings.Contains(m.Message, "not found") {
		t.Errorf("a missing object: %+v, want an Error", m)
	}
}

func TestRunLimits(t *testing.T) {
	i32 := func(v int32) *int32 { return &v }
	m := func(p v1alpha1.GatePhase) v1alpha1.GateMeasurement {
		return v1alpha1.GateMeasurement{Phase: p, Message: "x"}
	}
	S, F, I, E := v1alpha1.GateSuccessful, v1alpha1.GateFailed, v1alpha1.GateInconclusive, v1alpha1.GateError
	cases := []struct {
		name  string
		gate  v1alpha1.Gate
		ms    []v1alpha1.GatePhase
		want  v1alpha1.GatePhase
		early bool // decided before Finish
	}{
		{name: "all successful", ms: []v1alpha1.GatePhase{S, S, S}, want: S},
		{name: "one failure, limit 0", ms: []v1alpha1.GatePhase{S, F}, want: F, early: true},
		{name: "one failure within limit 1", gate: v1alpha1.Gate{FailureLimit: i32(1)}, ms: []v1alpha1.GatePhase{F, S}, want: S},
		{name: "inconclusive pauses", ms: []v1alpha1.GatePhase{S, I}, want: I, early: true},
		{name: "inconclusive within its limit", gate: v1alpha1.Gate{InconclusiveLimit: i32(1)}, ms: []v1alpha1.GatePhase{I, S}, want: S},
		{name: "errors past the limit fail", ms: []v1alpha1.GatePhase{E, E, E, E, E}, want: E, early: true},
		{name: "errors broken by a success", ms: []v1alpha1.GatePhase{E, E, E, E, S, E, S}, want: S},
		{name: "an error last is never a pass", ms: []v1alpha1.GatePhase{S, E}, want: E},
		{name: "no measurement", want: E},
		{name: "count reached", gate: v1alpha1.Gate{Count: i32(2)}, ms: []v1alpha1.GatePhase{S, S}, want: S, early: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.gate.Name, tc.gate.HTTP = "g", &v1alpha1.HTTPGate{URL: "http://127.0.0.1:1/"}
			r := NewRun(compile(t, tc.gate), Target{Context: "eu-0"}, time.Now())
			for _, p := range tc.ms {
				r.Record(m(p))
			}
			if r.Done() != tc.early {
				t.Errorf("Done = %v before Finish, want %v", r.Done(), tc.early)
			}
			r.Finish()
			if r.Result.Phase != tc.want {
				t.Errorf("phase = %s (%s), want %s", r.Result.Phase, r.Result.Message, tc.want)
			}
		})
	}
}

func TestRunSchedule(t *testing.T) {
	start := time.Unix(1000, 0)
	d := func(s time.Duration) *metav1.Duration { return &metav1.Duration{Duration: s} }
	three := int32(3)
	g := compile(t, v1alpha1.Gate{HTTP: &v1alpha1.HTTPGate{URL: "http://127.0.0.1:1/"}, Interval: d(10 * time.Second), InitialDelay: d(5 * time.Second), Count: &three})
	r := NewRun(g, Target{}, start)
	var due []int
	for s := 0; s <= 60; s++ {
		if r.Due(start.Add(time.Duration(s) * time.Second)) {
			due = append(due, s)
			r.Record(v1alpha1.GateMeasurement{Phase: v1alpha1.GateSuccessful})
		}
	}
	if fmt.Sprint(due) != "[5 15 25]" || r.NeedsFinal() {
		t.Errorf("measured at %v (final %v), want [5 15 25] and no final one", due, r.NeedsFinal())
	}
	once := NewRun(compile(t, v1alpha1.Gate{HTTP: &v1alpha1.HTTPGate{URL: "http://127.0.0.1:1/"}}), Target{}, start)
	if once.Due(start.Add(time.Hour)) || !once.NeedsFinal() {
		t.Errorf("a gate without interval or count measures only at the end")
	}
}
