package preflight

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
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

type clientsetFactory struct {
	cmdutil.Factory
	cs *kubernetes.Clientset
}

func (f clientsetFactory) KubernetesClientSet() (*kubernetes.Clientset, error) { return f.cs, nil }

// Two contexts sharing Reviews send each question once between them; a
// review that failed for one is asked again by the next that needs it,
// not answered with the other's error.
func TestReviewsShared(t *testing.T) {
	srv, sent := reviewsServer(t)
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL, ContentConfig: rest.ContentConfig{ContentType: "application/json"}})
	if err != nil {
		t.Fatal(err)
	}
	shared := &Reviews{}
	checkerOf := func(name string) *checker {
		return &checker{c: Context{Name: name, Factory: clientsetFactory{cs: cs}}, reviews: shared}
	}
	a, b := checkerOf("a"), checkerOf("b")
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
