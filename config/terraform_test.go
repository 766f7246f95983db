package config

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/hub"
)

// TestTerraformOnly checks that a config may hold only workspaces, and the
// workspace defaults.
func TestTerraformOnly(t *testing.T) {
	cfg := mustParse(t, `hub:
  policy: warn
terraform:
  - id: files
    dir: tf/files
  - id: dns
    dir: ~/infra/dns
    binary: terraform
    vars: {zone: example.org}
    varFiles: [prod.tfvars]
    interval: 30s
    policy: repair
    targets: ['module.zone["eu:west"].aws_route53_record.www', aws_route53_zone.main]
`)
	want := []Workspace{
		{ID: "files", Dir: "/srv/driftwatch/tf/files", Interval: DefaultTerraformInterval, Policy: hub.PolicyWarn},
		{ID: "dns", Dir: "/home/ops/infra/dns", Binary: "terraform", Vars: map[string]string{"zone": "example.org"},
			VarFiles: []string{"/srv/driftwatch/prod.tfvars"}, Interval: 30 * time.Second, Policy: hub.PolicyRepair,
			Targets: []string{`module.zone["eu:west"].aws_route53_record.www`, "aws_route53_zone.main"}},
	}
	if !reflect.DeepEqual(cfg.Terraform, want) {
		t.Errorf("Terraform = %+v\nwant %+v", cfg.Terraform, want)
	}
	if len(cfg.Clusters) != 0 {
		t.Errorf("clusters = %v, want none", cfg.Clusters)
	}
	if w, ok := cfg.Workspace("dns"); !ok || w.Binary != "terraform" {
		t.Errorf("Workspace(dns) = %+v, %v", w, ok)
	}
}

// TestTerraformSecretVars checks that a var written as ${NAME} is read from
// the environment and named a secret, while other values stay as written.
func TestTerraformSecretVars(t *testing.T) {
	cfg := mustParse(t, `terraform:
  - id: files
    dir: tf
    vars: {token: "${CLUSTER}", motd: "cost: $5 ${not a reference}", zone: "${KUBE_DIR}/x"}
`)
	w := cfg.Terraform[0]
	want := map[string]string{"token": "prod-eu", "motd": "cost: $5 ${not a reference}", "zone": "${KUBE_DIR}/x"}
	if !reflect.DeepEqual(w.Vars, want) || !reflect.DeepEqual(w.SecretVars, []string{"token"}) {
		t.Errorf("vars = %v, secret %v; want %v, [token]", w.Vars, w.SecretVars, want)
	}
	errs := parseErrors(t, "terraform:\n  - id: files\n    dir: tf\n    vars: {token: \"${UNSET_TOKEN}\"}\n")
	if got := errs.Error(); !strings.Contains(got, "terraform[0].vars[token]: environment variable UNSET_TOKEN is not set") {
		t.Errorf("unset variable: %s", got)
	}
}

func TestTerraformExampleLoads(t *testing.T) {
	cfg, err := Load("examples/terraform.yaml", testOptions())
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if len(cfg.Terraform) != 1 || cfg.Terraform[0].ID != "files" || !strings.HasSuffix(cfg.Terraform[0].Dir, "config/examples/terraform") {
		t.Errorf("Terraform = %+v", cfg.Terraform)
	}
}

func TestTerraformErrors(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []string // each an error line, exactly
	}{
		{"required", "terraform:\n  - binary: tofu\n", []string{
			"config.yaml:2:5: terraform[0].id: required field is missing",
			"config.yaml:2:5: terraform[0].dir: required field is missing",
		}},
		{"duplicate and clash", `clusters:
  - id: prod
    kubeconfig: k
terraform:
  - id: files
    dir: a
  - id: files
    dir: b
  - id: prod
    dir: c
`, []string{
			`config.yaml:7:9: terraform[1].id: duplicate terraform workspace id "files" (first at line 5)`,
			`config.yaml:9:9: terraform[2].id: id "prod" is also a cluster id (clusters[0].id at line 2); workspace and cluster ids must differ`,
		}},
		{"with coordination", `hub:
  coordination:
    namespace: driftwatch
terraform:
  - id: files
    dir: a
`, []string{
			`config.yaml:5:9: terraform[0]: terraform workspaces are not shared among replicas yet: run them in a hub without hub.coordination`,
		}},
		{"bad values", `terraform:
  - id: Files
    dir: a
    binary: tofuu
    interval: 0s
    policy: fix
    targets: [data.local_file.x, "not an address", local_file.a, local_file.a]
`, []string{
			`config.yaml:2:9: terraform[0].id: invalid name "Files": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character`,
			`config.yaml:4:13: terraform[0].binary: invalid binary "tofuu": want tofu, terraform or a path (did you mean "tofu"?)`,
			`config.yaml:5:15: terraform[0].interval: duration "0s" must be positive`,
			`config.yaml:6:13: terraform[0].policy: invalid policy "fix": want repair or warn`,
			`config.yaml:7:15: terraform[0].targets[0]: "data.local_file.x" is a data source: only managed resources can drift`,
			`config.yaml:7:34: terraform[0].targets[1]: invalid resource address "not an address": want TYPE.NAME, optionally indexed and under module.NAME steps (such as module.db["eu"].aws_db_instance.main)`,
			`config.yaml:7:66: terraform[0].targets[3]: resource address "local_file.a" is listed twice`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			list := parseErrors(t, tt.src)
			var got []string
			for _, e := range list {
				got = append(got, e.Error())
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}
