package yamliotest

// deployment is a Deployment in namespace a with the given containers
// (the lines of its containers list).
func deployment(name, containers string) string {
	return "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: " + name + "\n  namespace: a\nspec:\n  template:\n    spec:\n      containers:\n" + containers
}

// CommentShapes are the comment shapes yaml.v3 does not read back where
// it wrote them, reduced from rook-ceph's operator manifests (v1.14), each
// as the documents of one file. The first pass of function mode over a
// ResourceList of them changed on the second pass before settleList.
var CommentShapes = []struct{ Name, File string }{
	// The operator ConfigMap ends with comment blocks separated by blank
	// lines; read as items of one ResourceList, all but the first block go
	// between apiVersion and kind of the next item, and the next pass
	// drops the blank line after the last of them.
	{"foot comment blocks with blank lines ending an item", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: a\ndata:\n  k: v\n  # c1\n\n  # c2a\n  # c2b\n\n  # c3a\n  # c3b\n---\n# head\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n  namespace: a\n"},
	{"foot comment blocks ending an item, next item without a head comment", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: a\ndata:\n  k: v\n  # c1\n\n  # c2a\n  # c2b\n\n  # c3a\n  # c3b\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n  namespace: a\n"},
	{"foot comment blocks ending the last item", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: a\ndata:\n  k: v\n  # c1\n\n  # c2a\n  # c2b\n\n  # c3a\n  # c3b\n"},
	// A ServiceAccount ends with a commented-out imagePullSecrets at column
	// 0 and a blank line (common.yaml): the function adds annotations to
	// metadata, the first pass writes the comment after them at the item's
	// level, the next reads it into the annotations.
	{"comment block at the top level ending an item, then a blank line", "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: s\n  namespace: a\n# imagePullSecrets:\n#   - name: my-registry-secret\n\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: t\n  namespace: a\n"},
	// The operator container's env list is followed by a commented-out
	// resources block and another block: the first pass writes the first
	// block at the list's column, the next reads it as the foot comment of
	// the list's last entry and indents it under that entry.
	{"comment block after a nested compact list, a blank line, another block", deployment("d", "      - name: c\n        env:\n        - name: A\n          value: a\n        # r1\n\n        # u1\n      volumes: []\n")},
	{"comment blocks after a nested wide list and at the outer level", deployment("d", "        - name: c\n          env:\n            - name: A\n              value: a\n          # r1\n          # r2\n\n          # u1\n\n      # h1\n      volumes:\n        - name: v\n")},
	{"comment block after a nested list ending the document", deployment("d", "      - name: c\n        env:\n        - name: A\n          value: a\n        # r1\n\n        # u1\n")},
}
