package preflight

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
)

// reviewsServer answers SelfSubjectAccessReviews: allowed, but for the
// first one, which fails; it counts those it receives.
func reviewsServer(t *testing.T) (*httptest.Server, *atomic.Int32) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews" {
			http.NotFound(w, r)
			return
		}
		if n.Add(1) == 1 {
			http.Error(w, "etcd is down", http.StatusInternalServerError)
			return
		}
		var sar authorizationv1.SelfSubjectAccessReview
		if err := json.NewDecoder(r.Body).Decode(&sar); err != nil {
			t.Error(err)
		}
		sar.Status.Allowed = true
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(&sar)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

// configFactory is a factory of only its REST config.
type configFactory struct {
	cmdutil.Factory
	cfg *rest.Config
}

func (f configFactory) ToRESTConfig() (*rest.Config, error) { return rest.CopyConfig(f.cfg), nil }

// checkerOn is a checker of context name on cfg's server, sharing reviews.
func checkerOn(name string, cfg *rest.Config, reviews *Reviews) *checker {
	f := configFactory{cfg: cfg}
	return &checker{c: Context{Name: name, Factory: f}, reviews: reviews, accessReviews: newAccessReviews(f)}
}

// jsonConfig is a config of the test server at url.
func jsonConfig(url string) *rest.Config {
	return &rest.Config{Host: url, ContentConfig: rest.ContentConfig{ContentType: "application/json"}}
}

// Two contexts sharing Reviews send each question once between them; a
// review that failed for one is asked again by the next that needs it,
// not answered with the other's error.
func TestReviewsShared(t *testing.T) {
	srv, sent := reviewsServer(t)
	shared := &Reviews{}
	a, b := checkerOn("a", jsonConfig(srv.URL), shared), checkerOn("b", jsonConfig(srv.URL), shared)
	create := access{verb: "create", gr: schema.GroupResource{Group: "kpt.dev", Resource: "resourcegroups"}, namespace: "default"}
	ctx := context.Background()

	if _, _, err := a.review(ctx, create); err == nil {
		t.Fatal("the first review: no error, want the server's")
	}
	if allowed, _, err := b.review(ctx, create); err != nil || !allowed || sent.Load() != 2 {
		t.Fatalf("the other context's review after a failed one: %v, %v, %d sent; want it asked again and allowed", allowed, err, sent.Load())
	}
	var g sync.WaitGroup
	for _, ck := range []*checker{a, b, a, b} {
		g.Go(func() {
			if allowed, _, err := ck.review(ctx, create); err != nil || !allowed {
				t.Errorf("context %s: %v, %v; want the kept answer", ck.c.Name, allowed, err)
			}
		})
	}
	g.Wait()
	if sent.Load() != 2 {
		t.Errorf("%d reviews sent, want the answer kept for both contexts (2)", sent.Load())
	}
	update := create
	update.verb, update.name = "update", "inv-a"
	if allowed, _, err := a.review(ctx, update); err != nil || !allowed || sent.Load() != 3 {
		t.Errorf("another question: %v, %v, %d sent; want it asked", allowed, err, sent.Load())
	}
	if a.res.Reviews != 2 || b.res.Reviews != 1 {
		t.Errorf("reviews counted: a %d, b %d; want each context to count those it sent (2, 1)", a.res.Reviews, b.res.Reviews)
	}
}

// rbacServer answers SelfSubjectAccessReviews with allow, denying with
// the reason "RBAC: no rule"; it keeps the names asked, in order.
func rbacServer(t *testing.T, allow func(authorizationv1.ResourceAttributes) bool) (*rest.Config, func() []string) {
	var mu sync.Mutex
	var asked []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var sar authorizationv1.SelfSubjectAccessReview
		if err := json.NewDecoder(r.Body).Decode(&sar); err != nil {
			t.Error(err)
		}
		ra := *sar.Spec.ResourceAttributes
		mu.Lock()
		asked = append(asked, ra.Name)
		mu.Unlock()
		sar.Status.Allowed = allow(ra)
		if !sar.Status.Allowed {
			sar.Status.Reason = "RBAC: no rule for " + ra.Name
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(&sar)
	}))
	t.Cleanup(srv.Close)
	return jsonConfig(srv.URL), func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(asked)
	}
}

// A question naming its object is asked of every name first: allowed
// there, it answers every context's question with one review; denied
// there, the named question decides (a rule with resourceNames), and its
// answer is the one given.
func TestReviewsAnyNameFirst(t *testing.T) {
	status := func(name string) access {
		return access{verb: "update", gr: schema.GroupResource{Group: "kpt.dev", Resource: "resourcegroups"}, subresource: "status", namespace: "team-a", name: name}
	}
	ctx := context.Background()
	t.Run("EveryName", func(t *testing.T) {
		cfg, asked := rbacServer(t, func(authorizationv1.ResourceAttributes) bool { return true })
		shared := &Reviews{}
		for _, name := range []string{"inv-a", "inv-b", "inv-c"} {
			ck := checkerOn(name, cfg, shared)
			if allowed, why, err := ck.review(ctx, status(name)); !allowed || why != "" || err != nil {
				t.Errorf("%s: %v %q %v, want allowed", name, allowed, why, err)
			}
		}
		if got := asked(); !slices.Equal(got, []string{""}) {
			t.Errorf("names asked %q, want one review of every name", got)
		}
	})
	t.Run("ByName", func(t *testing.T) {
		cfg, asked := rbacServer(t, func(ra authorizationv1.ResourceAttributes) bool { return ra.Name == "inv-a" })
		shared := &Reviews{}
		a, b := checkerOn("a", cfg, shared), checkerOn("b", cfg, shared)
		if allowed, _, err := a.review(ctx, status("inv-a")); !allowed || err != nil {
			t.Errorf("inv-a, granted by name: %v %v, want allowed", allowed, err)
		}
		allowed, why, err := b.review(ctx, status("inv-b"))
		if allowed || err != nil || why != ": RBAC: no rule for inv-b" {
			t.Errorf("inv-b, not granted: %v %q %v, want denied with the named question's reason", allowed, why, err)
		}
		if got := asked(); !slices.Equal(got, []string{"", "inv-a", "inv-b"}) {
			t.Errorf("names asked %q, want every name once, then each name", got)
		}
	})
}
