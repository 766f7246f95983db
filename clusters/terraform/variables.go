package terraform

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/zclconf/go-cty/cty"
)

// SensitiveVariables returns the input variables of the root module in dir
// whose declaration says `sensitive = true`, read from its *.tf and
// *.tf.json files without running Terraform. A file that does not parse is
// an error naming it; a sensitive argument that is not a constant counts
// as sensitive.
func SensitiveVariables(dir string) (map[string]bool, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		if n := e.Name(); !e.IsDir() && (strings.HasSuffix(n, ".tf") || strings.HasSuffix(n, ".tf.json")) {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	// The variable blocks of a module file, and in each its sensitive
	// argument.
	fileSchema := &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: "variable", LabelNames: []string{"name"}}}}
	variableSchema := &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "sensitive"}}}
	p := hclparse.NewParser()
	out := map[string]bool{}
	for _, n := range names {
		path := filepath.Join(dir, n)
		var f *hcl.File
		var diags hcl.Diagnostics
		if strings.HasSuffix(n, ".json") {
			f, diags = p.ParseJSONFile(path)
		} else {
			f, diags = p.ParseHCLFile(path)
		}
		if diags.HasErrors() {
			return nil, fmt.Errorf("%s: %s", path, diags.Error())
		}
		content, _, _ := f.Body.PartialContent(fileSchema)
		for _, b := range content.Blocks {
			vc, _, _ := b.Body.PartialContent(variableSchema)
			a, ok := vc.Attributes["sensitive"]
			if !ok {
				continue
			}
			v, diags := a.Expr.Value(nil)
			if diags.HasErrors() || !v.IsKnown() || v.IsNull() || v.Type() != cty.Bool || v.True() {
				out[b.Labels[0]] = true
			}
		}
	}
	return out, nil
}
