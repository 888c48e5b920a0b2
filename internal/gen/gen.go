// Package gen writes seeded, realistic ResourceLists for benchmarks and
// differential tests: a package of N items spread over Namespaces that carry
// a shard label, and a ShardConfig of K contexts, laid out exactly as kpt
// passes a package to a function (items first, each with kpt's path and
// index annotations, then functionConfig).
package gen

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
)

// ShardLabel is the label the generated contexts select on.
const ShardLabel = "shardrouter.dev/shard"

// Options says what to generate. The same options always give the same bytes.
type Options struct {
	// Items is the number of items (at least 1).
	Items int
	// Contexts is the number of contexts of the ShardConfig (at least 1).
	Contexts int
	// Seed chooses names, labels, kinds and sizes.
	Seed uint64
	// Routed, when set, makes every routed item already carry the context
	// and datastore annotations a previous run wrote, as in a package that
	// is routed again after a change.
	Routed bool
}

// Bytes returns the ResourceList.
func Bytes(o Options) []byte {
	var b bytes.Buffer
	_ = Write(&b, o) // a bytes.Buffer never fails
	return b.Bytes()
}

// Write writes the ResourceList to w.
func Write(w io.Writer, o Options) error {
	if o.Items < 1 {
		o.Items = 1
	}
	if o.Contexts < 1 {
		o.Contexts = 1
	}
	g := &generator{o: o, rnd: rand.New(rand.NewPCG(o.Seed, 0x5eed)), w: bufio.NewWriterSize(w, 1<<16)}
	g.namespaces = max(1, o.Items/50)
	g.printf("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n")
	for i := 0; i < o.Items; i++ {
		g.item(i)
	}
	g.functionConfig()
	return g.w.Flush()
}

type generator struct {
	o          Options
	rnd        *rand.Rand
	w          *bufio.Writer
	namespaces int
	// next namespace to declare; items before it in a namespace are its own.
	declared int
}

func (g *generator) printf(format string, args ...any) { fmt.Fprintf(g.w, format, args...) }

// shardOf is the context index a namespace belongs to.
func (g *generator) shardOf(ns int) int { return ns % g.o.Contexts }

func shardName(i int) string { return fmt.Sprintf("shard-%04d", i) }

func nsName(i int) string { return fmt.Sprintf("team-%04d", i) }

var (
	components = []string{"frontend", "backend", "worker", "cache", "api", "scheduler"}
	parts      = []string{"shop", "billing", "search", "identity", "media"}
	teams      = []string{"payments", "growth", "platform", "catalog", "support"}
	envs       = []string{"prod", "staging", "canary"}
)

func (g *generator) pick(s []string) string { return s[g.rnd.IntN(len(s))] }

// item writes item i: the next Namespace when it is due (one per 50 items,
// each before the resources in it), otherwise a resource of a weighted kind.
func (g *generator) item(i int) {
	if g.declared < g.namespaces && (i == 0 || g.rnd.IntN(50) == 0 || g.o.Items-i <= g.namespaces-g.declared) {
		g.namespace(i, g.declared)
		g.declared++
		return
	}
	ns := g.rnd.IntN(max(1, g.declared))
	name := fmt.Sprintf("%s-%05d", g.pick(components), i)
	switch r := g.rnd.IntN(100); {
	case r < 25:
		g.deployment(i, ns, name)
	case r < 45:
		g.service(i, ns, name)
	case r < 65:
		g.configMap(i, ns, name)
	case r < 80:
		g.event(i, ns, name)
	case r < 93:
		g.lease(i, ns, name)
	case r < 99:
		g.clusterRole(i, ns, name)
	default:
		g.crd(i, name)
	}
}

// start begins an item; one in ten carries the licence header comment of
// its file, which kpt passes on as a comment of the item's first key.
func (g *generator) start(apiVersion, kind string) {
	g.printf("- ")
	if g.rnd.IntN(10) == 0 {
		g.printf("# Copyright 2026 The Shop Authors.\n  ")
	}
	g.printf("apiVersion: %s\n  kind: %s\n", apiVersion, kind)
}

// meta writes metadata with 6-7 labels and kpt's annotations.
func (g *generator) meta(kind, name, namespace string, shard int, routedTo string, extra ...string) {
	g.printf("  metadata:\n    name: %s\n", name)
	if namespace != "" {
		g.printf("    namespace: %s\n", namespace)
	}
	g.printf("    labels:\n")
	g.printf("      app.kubernetes.io/name: %s\n", name)
	g.printf("      app.kubernetes.io/instance: %s-%s\n", name, g.pick(envs))
	g.printf("      app.kubernetes.io/component: %s\n", g.pick(components))
	g.printf("      app.kubernetes.io/part-of: %s\n", g.pick(parts))
	g.printf("      app.kubernetes.io/managed-by: kpt\n")
	if shard >= 0 {
		g.printf("      %s: %s\n", ShardLabel, shardName(shard))
	}
	if g.rnd.IntN(2) == 0 {
		g.printf("      team: %s\n", g.pick(teams))
	}
	path := strings.ToLower(kind) + "_" + name + ".yaml"
	if namespace != "" {
		path = "namespaces/" + namespace + "/" + path
	}
	g.printf("    annotations:\n")
	g.printf("      config.kubernetes.io/origin: |\n        path: base/%s\n        repo: shop-platform\n", path)
	for _, a := range extra {
		g.printf("      %s\n", a)
	}
	if g.o.Routed && routedTo != "" {
		g.printf("      shardrouter.dev/context: '%s'\n", routedTo)
		ds := "default"
		if (kind == "Event" || kind == "Lease") && shard >= 0 && hasStores(shard) {
			ds = strings.ToLower(kind) + "s"
		}
		g.printf("      shardrouter.dev/datastore: '%s'\n", ds)
	}
	g.printf("      config.kubernetes.io/index: '0'\n")
	g.printf("      config.kubernetes.io/path: '%s'\n", path)
	g.printf("      internal.config.kubernetes.io/index: '0'\n")
	g.printf("      internal.config.kubernetes.io/path: '%s'\n", path)
	seqIndent := "compact"
	if g.rnd.IntN(5) == 0 {
		seqIndent = "wide"
	}
	g.printf("      internal.config.kubernetes.io/seqindent: '%s'\n", seqIndent)
}

// hasStores reports whether a context declares the events and leases
// datastores (every fourth does).
func hasStores(ctx int) bool { return ctx%4 == 0 }

func (g *generator) namespace(i, ns int) {
	shard := g.shardOf(ns)
	g.start("v1", "Namespace")
	g.meta("Namespace", nsName(ns), "", shard, shardName(shard))
}

// deployment writes a Deployment of a web service, with the fields and
// comments of a real one.
func (g *generator) deployment(i, ns int, name string) {
	shard := g.shardOf(ns)
	g.start("apps/v1", "Deployment")
	g.meta("Deployment", name, nsName(ns), shard, shardName(shard), "deployment.kubernetes.io/revision: '3'")
	g.printf(`  spec:
    replicas: %d # tuned for peak traffic
    revisionHistoryLimit: 5
    selector:
      matchLabels:
        app.kubernetes.io/name: %s
    strategy:
      type: RollingUpdate
      rollingUpdate:
        maxSurge: 25%%
        maxUnavailable: 0
    template:
      metadata:
        labels:
          app.kubernetes.io/name: %s
          app.kubernetes.io/component: %s
      spec:
        serviceAccountName: %s
        containers:
`, 1+g.rnd.IntN(5), name, name, g.pick(components), name)
	g.container()
	g.podSecurityAndVolumes(name)
}

// container writes a Deployment's one container.
func (g *generator) container() {
	g.printf(`        - name: app
          image: shop/%s:1.%d.%d
          args: ["--port=8080", "--log-level=info"]
          ports:
          - name: http
            containerPort: 8080
            protocol: TCP
          env:
          - name: GOMAXPROCS
            value: "2"
          - name: POD_NAME
            valueFrom:
              fieldRef:
                fieldPath: metadata.name
          resources:
            requests:
              cpu: %dm
              memory: %dMi
            limits:
              memory: %dMi
          readinessProbe:
            httpGet:
              path: /healthz
              port: http
            periodSeconds: 10
          securityContext:
            allowPrivilegeEscalation: false
            readOnlyRootFilesystem: true
            capabilities:
              drop: ["ALL"]
          volumeMounts:
          - name: config
            mountPath: /etc/app
            readOnly: true
          - name: tmp
            mountPath: /tmp
`, g.pick(components), g.rnd.IntN(20), g.rnd.IntN(10),
		50*(1+g.rnd.IntN(8)), 64*(1+g.rnd.IntN(8)), 128*(1+g.rnd.IntN(8)))
}

// podSecurityAndVolumes writes the rest of a Deployment's pod spec.
func (g *generator) podSecurityAndVolumes(name string) {
	g.printf(`        securityContext:
          runAsNonRoot: true
          seccompProfile:
            type: RuntimeDefault
        volumes:
        - name: config
          configMap:
            name: %s-config
        - name: tmp
          emptyDir: {}
        tolerations:
        - key: dedicated
          operator: Equal
          value: shop
          effect: NoSchedule
`, name)
}

func (g *generator) service(i, ns int, name string) {
	shard := g.shardOf(ns)
	g.start("v1", "Service")
	g.meta("Service", name, nsName(ns), shard, shardName(shard))
	g.printf(`  spec:
    type: ClusterIP
    selector:
      app.kubernetes.io/name: %s
    ports:
    - name: http
      port: 80
      targetPort: http
      protocol: TCP
    - name: metrics
      port: 9090
      targetPort: 9090
      protocol: TCP
    sessionAffinity: None
    internalTrafficPolicy: Cluster
    ipFamilyPolicy: SingleStack
    ipFamilies:
    - IPv4
`, name)
}

func (g *generator) configMap(i, ns int, name string) {
	shard := g.shardOf(ns)
	g.start("v1", "ConfigMap")
	g.meta("ConfigMap", name, nsName(ns), shard, shardName(shard))
	g.printf(`  data:
    LOG_LEVEL: info
    "feature.flags": "checkout-v2,search-ranking"
    app.properties: |
      server.port=8080
      cache.size=%d
      # properties keep their own comments
      upstream.url=http://%s.%s.svc:80
      retry.max=%d
      retry.backoff=250ms
    motd: >-
      Welcome to %s, served from %s.
    logging.yaml: |
      level: info
      format: json
      sinks:
      - stdout
    TIMEOUT_SECONDS: "%d"
    REGION: eu-west-%d
`, 128*(1+g.rnd.IntN(16)), name, nsName(ns), 1+g.rnd.IntN(9), name, shardName(shard), 5*(1+g.rnd.IntN(12)), 1+g.rnd.IntN(3))
}

func (g *generator) event(i, ns int, name string) {
	shard := g.shardOf(ns)
	g.start("v1", "Event")
	g.meta("Event", name+".17f3a2b4c5d6e7f8", nsName(ns), shard, shardName(shard))
	g.printf(`  involvedObject:
    apiVersion: apps/v1
    kind: Deployment
    name: %s
    namespace: %s
  reason: ScalingReplicaSet
  message: 'Scaled up replica set %s-7d9f8c6b5 to %d'
  type: Normal
  count: %d
  firstTimestamp: "2026-01-0%dT10:00:00Z"
  lastTimestamp: "2026-01-0%dT11:00:00Z"
  source:
    component: deployment-controller
  reportingComponent: deployment-controller
  reportingInstance: kube-controller-manager-%s
`, name, nsName(ns), name, 1+g.rnd.IntN(5), 1+g.rnd.IntN(40), 1+g.rnd.IntN(4), 5+g.rnd.IntN(4), shardName(shard))
}

func (g *generator) lease(i, ns int, name string) {
	shard := g.shardOf(ns)
	g.start("coordination.k8s.io/v1", "Lease")
	g.meta("Lease", name, nsName(ns), shard, shardName(shard))
	g.printf(`  spec:
    holderIdentity: %s-7d9f8c6b5-x%04d
    leaseDurationSeconds: 15
    acquireTime: "2026-01-01T10:00:00.000000Z"
    renewTime: "2026-01-01T10:05:00.000000Z"
    leaseTransitions: %d
    strategy: OldestEmulationVersion
`, name, g.rnd.IntN(10000), g.rnd.IntN(5))
}

// clusterRole is cluster-scoped and labelled with a shard, so the context's
// resourceSelector places it.
func (g *generator) clusterRole(i, ns int, name string) {
	shard := g.shardOf(ns)
	g.start("rbac.authorization.k8s.io/v1", "ClusterRole")
	g.meta("ClusterRole", name+"-reader", "", shard, shardName(shard))
	g.printf(`  rules:
  - apiGroups: [""]
    resources: ["configmaps", "services", "endpoints"]
    verbs: ["get", "list", "watch"]
  - apiGroups: ["apps"]
    resources:
    - deployments
    - replicasets
    verbs:
    - get
    - list
    - watch
  - nonResourceURLs: ["/metrics"]
    verbs: ["get"]
`)
}

// crd has no shard label: it is broadcast to every context, as CRDs are.
func (g *generator) crd(i int, name string) {
	plural := strings.ReplaceAll(name, "-", "") + "s"
	full := plural + ".shop.example.com"
	all := make([]string, g.o.Contexts)
	for k := range all {
		all[k] = shardName(k)
	}
	g.start("apiextensions.k8s.io/v1", "CustomResourceDefinition")
	g.meta("CustomResourceDefinition", full, "", -1, strings.Join(all, ","))
	g.printf(`  spec:
    group: shop.example.com
    scope: Namespaced
    names:
      kind: Widget%d
      plural: %s
      singular: %s
      listKind: Widget%dList
    versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              x-kubernetes-preserve-unknown-fields: true
`, i, plural, strings.TrimSuffix(plural, "s"), i)
}

// functionConfig writes the ShardConfig after the items, as kpt does: one
// context per shard label value (namespace and resource selectors; every
// eighth as a set-based `In` requirement), and events and leases in their
// own datastores on every fourth context.
func (g *generator) functionConfig() {
	g.printf(`functionConfig:
  apiVersion: shardrouter.dev/v1alpha1
  kind: ShardConfig
  metadata:
    name: shards
    annotations:
      config.kubernetes.io/local-config: "true"
  spec:
    contexts:
`)
	for k := 0; k < g.o.Contexts; k++ {
		s := shardName(k)
		g.printf("    - name: %s\n", s)
		for _, sel := range []string{"namespaceSelector", "resourceSelector"} {
			if k%8 == 7 {
				g.printf("      %s:\n        matchExpressions:\n        - key: %s\n          operator: In\n          values: [%s]\n", sel, ShardLabel, s)
			} else {
				g.printf("      %s:\n        matchLabels:\n          %s: %s\n", sel, ShardLabel, s)
			}
		}
		if hasStores(k) {
			g.printf("      dataStores:\n")
			for _, ds := range []string{"events", "leases"} {
				g.printf("      - name: %s\n        endpoints:\n        - https://etcd-%s-%d.%s.example:2379\n", ds, ds, k, s)
			}
		}
	}
	g.printf(`    dataStoreOverrides:
    - resource: /events
      dataStore: events
      ephemeral: true
    - resource: coordination.k8s.io/leases
      dataStore: leases
`)
}
