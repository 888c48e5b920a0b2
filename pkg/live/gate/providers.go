package gate

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
)

// maxBody bounds what a measurement reads of a response.
const maxBody = 4 << 20

// get reads url; an answer outside 2xx is returned with its status.
func get(ctx context.Context, u string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return resp.StatusCode, nil, fmt.Errorf("reading the response: %w", err)
	}
	return resp.StatusCode, body, nil
}

// prometheus is an instant query of the Prometheus HTTP API.
type prometheus struct{ query string }

// promResponse is /api/v1/query's answer.
type promResponse struct {
	Status    string `json:"status"`
	ErrorType string `json:"errorType"`
	Error     string `json:"error"`
	Data      struct {
		ResultType string          `json:"resultType"`
		Result     json.RawMessage `json:"result"`
	} `json:"data"`
}

func (p *prometheus) measure(ctx context.Context, t Target) (map[string]any, string, v1alpha1.GatePhase, error) {
	base := t.Endpoints[v1alpha1.PrometheusEndpoint]
	if base == "" {
		return nil, "", "", fmt.Errorf("context %s has no endpoints.%s", t.Context, v1alpha1.PrometheusEndpoint)
	}
	q := v1alpha1.ExpandPlaceholders(p.query, t.Context, t.Labels)
	u := strings.TrimSuffix(base, "/") + "/api/v1/query?" + url.Values{"query": {q}}.Encode()
	status, body, err := get(ctx, u)
	if err != nil {
		return nil, "", "", fmt.Errorf("querying %s: %w", base, err)
	}
	var resp promResponse
	if err := json.Unmarshal(body, &resp); err != nil {
		return nil, "", "", fmt.Errorf("querying %s: HTTP %d, not the Prometheus API's answer: %.200s", base, status, body)
	}
	if resp.Status != "success" {
		return nil, "", "", fmt.Errorf("querying %s: HTTP %d: %s: %s", base, status, resp.ErrorType, resp.Error)
	}
	var values []float64
	switch resp.Data.ResultType {
	case "scalar":
		var sample []any
		if err := json.Unmarshal(resp.Data.Result, &sample); err != nil {
			return nil, "", "", fmt.Errorf("a scalar result: %w", err)
		}
		v, err := sampleValue(sample)
		if err != nil {
			return nil, "", "", err
		}
		values = append(values, v)
	case "vector":
		var vec []struct {
			Value []any `json:"value"`
		}
		if err := json.Unmarshal(resp.Data.Result, &vec); err != nil {
			return nil, "", "", fmt.Errorf("a vector result: %w", err)
		}
		for _, s := range vec {
			v, err := sampleValue(s.Value)
			if err != nil {
				return nil, "", "", err
			}
			values = append(values, v)
		}
	default:
		return nil, "", "", fmt.Errorf("result type %q: the query must give a scalar or an instant vector", resp.Data.ResultType)
	}
	if len(values) == 0 {
		return nil, "", "", fmt.Errorf("the query returned no sample: an empty result is never a pass")
	}
	for _, v := range values {
		if math.IsNaN(v) {
			return nil, "", "", fmt.Errorf("the query returned NaN (no data, such as 0/0): never a pass")
		}
	}
	if len(values) == 1 {
		return map[string]any{"result": values[0]}, formatFloat(values[0]), "", nil
	}
	list := make([]any, len(values))
	strs := make([]string, len(values))
	for i, v := range values {
		list[i], strs[i] = v, formatFloat(v)
	}
	return map[string]any{"result": list}, "[" + strings.Join(strs, ", ") + "]", "", nil
}

// sampleValue reads [timestamp, "value"].
func sampleValue(sample []any) (float64, error) {
	if len(sample) != 2 {
		return 0, fmt.Errorf("a sample is [time, value], got %v", sample)
	}
	s, ok := sample[1].(string)
	if !ok {
		return 0, fmt.Errorf("a sample's value is a string, got %v", sample[1])
	}
	return strconv.ParseFloat(s, 64)
}

func formatFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// httpProvider is a GET whose status must be one of expectStatus.
type httpProvider struct {
	spec v1alpha1.HTTPGate
	// decode reads the body as JSON for the conditions.
	decode bool
}

func (p *httpProvider) measure(ctx context.Context, t Target) (map[string]any, string, v1alpha1.GatePhase, error) {
	u := v1alpha1.ExpandPlaceholders(p.spec.URL, t.Context, t.Labels)
	status, body, err := get(ctx, u)
	if err != nil {
		return nil, "", "", fmt.Errorf("GET %s: %w", u, err)
	}
	value := strconv.Itoa(status)
	expect := p.spec.ExpectStatus
	if len(expect) == 0 {
		expect = []int32{http.StatusOK}
	}
	if !slices.Contains(expect, int32(status)) {
		return nil, value, v1alpha1.GateFailed, nil
	}
	vars := map[string]any{"status": int64(status)}
	if p.decode {
		var doc any
		if err := json.Unmarshal(body, &doc); err != nil {
			return nil, value, "", fmt.Errorf("GET %s: HTTP %d, a body that is not JSON: %v", u, status, err)
		}
		vars["body"], vars["result"] = doc, doc
	}
	return vars, value, "", nil
}

// kubernetes reads one object in the context's cluster.
type kubernetes struct{ spec v1alpha1.KubernetesGate }

func (p *kubernetes) measure(ctx context.Context, t Target) (map[string]any, string, v1alpha1.GatePhase, error) {
	if t.Dynamic == nil || t.Mapper == nil {
		return nil, "", "", fmt.Errorf("context %s: no client to read %s", t.Context, p.spec.Kind)
	}
	gv, err := schema.ParseGroupVersion(p.spec.APIVersion)
	if err != nil {
		return nil, "", "", err
	}
	mapping, err := t.Mapper.RESTMapping(gv.WithKind(p.spec.Kind).GroupKind(), gv.Version)
	if err != nil {
		return nil, "", "", fmt.Errorf("context %s: %s %s: %w", t.Context, p.spec.APIVersion, p.spec.Kind, err)
	}
	ri := t.Dynamic.Resource(mapping.Resource)
	ref := p.spec.Kind + " " + p.spec.Name
	var obj map[string]any
	if p.spec.Namespace != "" {
		ref = p.spec.Kind + " " + p.spec.Namespace + "/" + p.spec.Name
		u, err := ri.Namespace(p.spec.Namespace).Get(ctx, p.spec.Name, metav1.GetOptions{})
		if err != nil {
			return nil, "", "", fmt.Errorf("context %s: reading %s: %w", t.Context, ref, err)
		}
		obj = u.Object
	} else {
		u, err := ri.Get(ctx, p.spec.Name, metav1.GetOptions{})
		if err != nil {
			return nil, "", "", fmt.Errorf("context %s: reading %s: %w", t.Context, ref, err)
		}
		obj = u.Object
	}
	value := ref
	if st, ok := obj["status"]; ok {
		if b, err := json.Marshal(st); err == nil {
			value = fmt.Sprintf("%.200s", b)
		}
	}
	return map[string]any{"object": obj, "result": obj}, value, "", nil
}
