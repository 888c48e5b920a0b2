package cli

import (
	"encoding/json"
	"reflect"
	"testing"

	sigsyaml "sigs.k8s.io/yaml"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
)

// report -o yaml is the CapacityReport of -o json, through the one output
// layer.
func TestReportYAMLIsTheJSONDocument(t *testing.T) {
	code, jsonOut, stderr := execCLI(t, "", "report", reportPkg, "-o", "json")
	if code != 0 {
		t.Fatalf("json: exit %d: %s", code, stderr)
	}
	code, yamlOut, stderr := execCLI(t, "", "report", reportPkg, "-o", "yaml")
	if code != 0 {
		t.Fatalf("yaml: exit %d: %s", code, stderr)
	}
	var fromJSON, fromYAML v1alpha1.CapacityReport
	if err := json.Unmarshal([]byte(jsonOut), &fromJSON); err != nil {
		t.Fatal(err)
	}
	if err := sigsyaml.UnmarshalStrict([]byte(yamlOut), &fromYAML); err != nil {
		t.Fatalf("%v\n%s", err, yamlOut)
	}
	if fromYAML.Kind != "CapacityReport" || fromYAML.APIVersion != "shardrouter.dev/v1alpha1" || len(fromYAML.Contexts) == 0 {
		t.Errorf("yaml: %+v", fromYAML.TypeMeta)
	}
	if !reflect.DeepEqual(fromJSON, fromYAML) {
		t.Errorf("json and yaml differ:\n%+v\n%+v", fromJSON, fromYAML)
	}
}
