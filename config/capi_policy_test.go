package config

import (
	"reflect"
	"strings"
	"testing"

	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// TestClusterAPIKubeconfigPolicy checks the fields that say what the
// kubeconfig secrets of a source's clusters may use: absent, they deny exec
// plugins and insecure TLS.
func TestClusterAPIKubeconfigPolicy(t *testing.T) {
	cfg := mustParse(t, `clusterAPI:
  - name: strict
    kubeconfig: /k
  - name: eks
    kubeconfig: /k
    execAllowlist:
      - command: /usr/local/bin/aws-iam-authenticator
      - {command: kubelogin}
    allowInsecureSkipTLSVerify: true
applications:
  - {id: x, namespace: ns, selector: env=prod, image: nginx}
`)
	tests := []struct {
		source   string
		allow    []clientcmdapi.AllowlistEntry
		insecure bool
	}{
		{"strict", nil, false},
		{"eks", []clientcmdapi.AllowlistEntry{{Command: "/usr/local/bin/aws-iam-authenticator"}, {Command: "kubelogin"}}, true},
	}
	for i, tt := range tests {
		s := cfg.ClusterAPI[i]
		if s.Name != tt.source || !reflect.DeepEqual(s.ExecAllowlist, tt.allow) || s.AllowInsecureSkipTLSVerify != tt.insecure {
			t.Errorf("source %s: execAllowlist %+v insecure %v, want %+v %v", s.Name, s.ExecAllowlist, s.AllowInsecureSkipTLSVerify, tt.allow, tt.insecure)
		}
	}
}

// TestClusterAPIKubeconfigPolicyErrors checks every invalid form of the
// fields, each reported at its line and column.
func TestClusterAPIKubeconfigPolicyErrors(t *testing.T) {
	const head = "applications:\n  - {id: x, namespace: ns, selector: env=prod, image: nginx}\nclusterAPI:\n"
	tests := []struct {
		name string
		src  string
		want []string
	}{
		{"empty list", "  - name: m\n    kubeconfig: /k\n    execAllowlist: []\n",
			[]string{"config.yaml:6:20: clusterAPI[0].execAllowlist: must not be empty (leave it out to deny every exec plugin)"}},
		{"null", "  - name: m\n    kubeconfig: /k\n    execAllowlist:\n",
			[]string{"config.yaml:6:5: clusterAPI[0].execAllowlist: must not be empty (leave it out to deny every exec plugin)"}},
		{"not a list", "  - name: m\n    kubeconfig: /k\n    execAllowlist: /bin/sh\n",
			[]string{"config.yaml:6:20: clusterAPI[0].execAllowlist: want a list, got \"/bin/sh\""}},
		{"bare strings", "  - name: m\n    kubeconfig: /k\n    execAllowlist: [/bin/sh]\n",
			[]string{"config.yaml:6:21: clusterAPI[0].execAllowlist[0]: want a mapping, got \"/bin/sh\""}},
		{"entry problems", `  - name: m
    kubeconfig: /k
    execAllowlist:
      - command: /usr/bin/../bin/sh
      - command: bin/plugin
      - command: ""
      - {cmd: /bin/sh}
      - command: [/bin/sh]
      - command: /opt/plugin
      - command: /opt/plugin
`, []string{
			`config.yaml:7:18: clusterAPI[0].execAllowlist[0].command: "/usr/bin/../bin/sh" is not a normalised path: write "/usr/bin/sh"`,
			`config.yaml:8:18: clusterAPI[0].execAllowlist[1].command: "bin/plugin" is a relative path: want an absolute path or a command name looked up in PATH`,
			`config.yaml:9:18: clusterAPI[0].execAllowlist[2].command: must not be empty`,
			`config.yaml:10:9: clusterAPI[0].execAllowlist[3].command: required field is missing`,
			`config.yaml:10:10: clusterAPI[0].execAllowlist[3].cmd: unknown field`,
			`config.yaml:11:18: clusterAPI[0].execAllowlist[4].command: want a string, got a list`,
			`config.yaml:13:18: clusterAPI[0].execAllowlist[6].command: command "/opt/plugin" is listed twice`,
		}},
		{"insecure not a bool", "  - name: m\n    kubeconfig: /k\n    allowInsecureSkipTLSVerify: yes please\n",
			[]string{"config.yaml:6:33: clusterAPI[0].allowInsecureSkipTLSVerify: want true or false, got \"yes please\""}},
		{"misspelt field", "  - name: m\n    kubeconfig: /k\n    execAllowList: [{command: /bin/sh}]\n",
			[]string{`config.yaml:6:5: clusterAPI[0].execAllowList: unknown field (did you mean "execAllowlist"?)`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			list := parseErrors(t, head+tt.src)
			var got []string
			for _, e := range list {
				got = append(got, e.Error())
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}
