package deploy_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/slackpoll/slackpoll/config"
	"github.com/slackpoll/slackpoll/internal/httpapi"
	"github.com/slackpoll/slackpoll/internal/testsupport/storetest"
)

// The manifests of deploy/k8s, read as the few fields their promises rest on.
type (
	k8sEnv struct {
		Name      string `yaml:"name"`
		Value     string `yaml:"value"`
		ValueFrom *struct {
			SecretKeyRef struct {
				Name string `yaml:"name"`
				Key  string `yaml:"key"`
			} `yaml:"secretKeyRef"`
		} `yaml:"valueFrom"`
	}
	k8sProbe struct {
		HTTPGet *struct {
			Path string `yaml:"path"`
			Port string `yaml:"port"`
		} `yaml:"httpGet"`
		Exec *struct {
			Command []string `yaml:"command"`
		} `yaml:"exec"`
	}
	k8sContainer struct {
		Image   string   `yaml:"image"`
		Args    []string `yaml:"args"`
		Command []string `yaml:"command"`
		Env     []k8sEnv `yaml:"env"`
		Ports   []struct {
			Name          string `yaml:"name"`
			ContainerPort int    `yaml:"containerPort"`
		} `yaml:"ports"`
		LivenessProbe  *k8sProbe `yaml:"livenessProbe"`
		ReadinessProbe *k8sProbe `yaml:"readinessProbe"`
	}
	k8sPodSpec struct {
		Containers []k8sContainer `yaml:"containers"`
	}
	statefulSet struct {
		Metadata struct{ Name string } `yaml:"metadata"`
		Spec     struct {
			ServiceName string                                  `yaml:"serviceName"`
			Replicas    int                                     `yaml:"replicas"`
			Selector    struct{ MatchLabels map[string]string } `yaml:"selector"`
			Template    struct {
				Metadata struct{ Labels map[string]string } `yaml:"metadata"`
				Spec     k8sPodSpec                         `yaml:"spec"`
			} `yaml:"template"`
		} `yaml:"spec"`
	}
	k8sService struct {
		Metadata struct{ Name string } `yaml:"metadata"`
		Spec     struct {
			ClusterIP string            `yaml:"clusterIP"`
			Selector  map[string]string `yaml:"selector"`
			Ports     []struct {
				Port       int    `yaml:"port"`
				TargetPort string `yaml:"targetPort"`
			} `yaml:"ports"`
		} `yaml:"spec"`
	}
	configMap struct {
		Data map[string]string `yaml:"data"`
	}
	cronJob struct {
		Spec struct {
			JobTemplate struct {
				Spec struct {
					Template struct {
						Spec k8sPodSpec `yaml:"spec"`
					} `yaml:"template"`
				} `yaml:"spec"`
			} `yaml:"jobTemplate"`
		} `yaml:"spec"`
	}
)

func readManifest(t *testing.T, name string, v any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("k8s", name))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

// k8sManifests reads the StatefulSet, the Service, the ConfigMap's config file
// (as loaded by a pod: see podConfig) and the backup CronJob.
func k8sManifests(t *testing.T) (statefulSet, k8sService, *config.Config, cronJob) {
	t.Helper()
	var (
		sts statefulSet
		svc k8sService
		cm  configMap
		cj  cronJob
	)
	readManifest(t, "statefulset.yaml", &sts)
	readManifest(t, "service.yaml", &svc)
	readManifest(t, "configmap.yaml", &cm)
	readManifest(t, "backup-cronjob.yaml", &cj)
	if len(sts.Spec.Template.Spec.Containers) != 1 || len(cj.Spec.JobTemplate.Spec.Template.Spec.Containers) != 1 {
		t.Fatal("want one container in the StatefulSet's pods and one in the backup job's")
	}
	return sts, svc, podConfig(t, cm.Data["slackpoll.yaml"]), cj
}

// podConfig loads the ConfigMap's config file as pod slackpoll-1 would: the
// ordinal its hostname gives is written in (the test's hostname is not a pod's),
// and the Secret's variables are set.
func podConfig(t *testing.T, text string) *config.Config {
	t.Helper()
	if !strings.Contains(text, "ordinal_from_hostname: true") {
		t.Fatal("the ConfigMap's config does not take the ordinal from the pod's name (shard.ordinal_from_hostname: true)")
	}
	text = strings.Replace(text, "ordinal_from_hostname: true", "ordinal: 1", 1)
	for _, v := range []string{"SLACKPOLL_HTTP_TOKEN", "SLACKPOLL_INSTALL_KEY", "SLACK_CLIENT_ID", "SLACK_CLIENT_SECRET"} {
		t.Setenv(v, "")
	}
	t.Setenv("SLACKPOLL_HTTP_TOKEN", "k8s-test-token")
	f := filepath.Join(t.TempDir(), "slackpoll.yaml")
	if err := os.WriteFile(f, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(f)
	if err != nil {
		t.Fatalf("the ConfigMap's config does not load: %v", err)
	}
	return cfg
}

func envOf(c k8sContainer, name string) (k8sEnv, bool) {
	i := slices.IndexFunc(c.Env, func(e k8sEnv) bool { return e.Name == name })
	if i < 0 {
		return k8sEnv{}, false
	}
	return c.Env[i], true
}

// The StatefulSet, its headless Service and the config agree: shard.replicas is
// the StatefulSet's replicas (two replicas counting differently would poll one
// workspace twice), the Service is the StatefulSet's (its pods' DNS names) and
// selects its pods, and the ports are http.listen's.
func TestK8sReplicasServiceAndPortsAgree(t *testing.T) {
	sts, svc, cfg, _ := k8sManifests(t)
	if sts.Spec.Replicas < 1 || cfg.Shard.Replicas != sts.Spec.Replicas {
		t.Errorf("shard.replicas in the ConfigMap is %d, the StatefulSet's replicas %d: they must be equal", cfg.Shard.Replicas, sts.Spec.Replicas)
	}
	if svc.Metadata.Name != sts.Spec.ServiceName || svc.Spec.ClusterIP != "None" {
		t.Errorf("the Service %q (clusterIP %q) is not the StatefulSet's headless service %q", svc.Metadata.Name, svc.Spec.ClusterIP, sts.Spec.ServiceName)
	}
	for k, v := range svc.Spec.Selector {
		if sts.Spec.Template.Metadata.Labels[k] != v {
			t.Errorf("the Service selects %s=%s, which the StatefulSet's pods do not carry", k, v)
		}
	}
	for k, v := range sts.Spec.Selector.MatchLabels {
		if sts.Spec.Template.Metadata.Labels[k] != v {
			t.Errorf("the StatefulSet selects %s=%s, which its pods do not carry", k, v)
		}
	}
	_, port, err := net.SplitHostPort(cfg.HTTP.Listen)
	if err != nil {
		t.Fatalf("http.listen %q: %v", cfg.HTTP.Listen, err)
	}
	c := sts.Spec.Template.Spec.Containers[0]
	if len(c.Ports) != 1 || strconv.Itoa(c.Ports[0].ContainerPort) != port {
		t.Errorf("the container's ports %+v are not http.listen's port %s", c.Ports, port)
	}
	if len(svc.Spec.Ports) != 1 || strconv.Itoa(svc.Spec.Ports[0].Port) != port || len(c.Ports) == 1 && svc.Spec.Ports[0].TargetPort != c.Ports[0].Name {
		t.Errorf("the Service's ports %+v do not lead to the container's port %+v", svc.Spec.Ports, c.Ports)
	}
	if !cfg.HTTP.Token.IsSet() {
		t.Error("http.listen is on every interface of the pod but http.token is not set")
	}
	if e, ok := envOf(c, "SLACKPOLL_CONFIG"); !ok || e.Value != "/etc/slackpoll/slackpoll.yaml" {
		t.Errorf("SLACKPOLL_CONFIG = %+v, want the ConfigMap's mount, /etc/slackpoll/slackpoll.yaml, for `run` and the probe's `healthcheck`", e)
	}
}

// k8sAPI serves the daemon's HTTP API as the pod's config sets it up (token,
// listen, allowed hosts) over a fresh store, and sends one request.
func k8sAPI(t *testing.T, cfg *config.Config) func(host, path, token string) int {
	h := httpapi.New(httpapi.Options{
		Store:        storetest.Open(t),
		Token:        cfg.HTTP.Token.Reveal(),
		Listen:       cfg.HTTP.Listen,
		AllowedHosts: cfg.HTTP.AllowedHosts,
		SpoolDir:     t.TempDir(),
	})
	return func(host, path, token string) int {
		r := httptest.NewRequestWithContext(t.Context(), http.MethodGet, path, nil)
		r.Host = host
		if token != "" {
			r.Header.Set("Authorization", "Bearer "+token)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
}

// The probes ask what the daemon serves: liveness an HTTP path answered without
// a token to the kubelet (whose Host is the pod's IP), readiness `slackpoll
// healthcheck`, a command of the binary that asks /readyz with http.token.
func TestK8sProbesAskWhatTheDaemonServes(t *testing.T) {
	sts, _, cfg, _ := k8sManifests(t)
	c := sts.Spec.Template.Spec.Containers[0]
	get := k8sAPI(t, cfg)
	live := c.LivenessProbe
	if live == nil || live.HTTPGet == nil {
		t.Fatal("the liveness probe is not an httpGet")
	}
	if len(c.Ports) != 1 || live.HTTPGet.Port != c.Ports[0].Name {
		t.Errorf("the liveness probe's port %q is not the container's %+v", live.HTTPGet.Port, c.Ports)
	}
	_, port, _ := net.SplitHostPort(cfg.HTTP.Listen)
	if code := get(net.JoinHostPort("10.244.1.7", port), live.HTTPGet.Path, ""); code != http.StatusOK {
		t.Errorf("the liveness probe's GET %s from the kubelet answers %d, want 200", live.HTTPGet.Path, code)
	}
	ready := c.ReadinessProbe
	if ready == nil || ready.Exec == nil || len(ready.Exec.Command) != 2 || ready.Exec.Command[0] != "/usr/local/bin/slackpoll" || ready.Exec.Command[1] != "healthcheck" {
		t.Fatalf("the readiness probe is not `/usr/local/bin/slackpoll healthcheck`: %+v", ready)
	}
	// What `healthcheck` asks (internal/cli/cmd_healthcheck.go): /readyz on loopback
	// with http.token.
	if code := get(net.JoinHostPort("127.0.0.1", port), "/readyz", cfg.HTTP.Token.Reveal()); code != http.StatusOK {
		t.Errorf("GET /readyz with the pod's token answers %d, want 200", code)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "go", "run", "../cmd/slackpoll", "healthcheck", "--help").CombinedOutput(); err != nil {
		t.Errorf("the readiness probe's command `slackpoll healthcheck` does not exist: %v\n%s", err, out)
	}
}

// The backup job reaches every ordinal: it loops over REPLICAS (the StatefulSet's
// replicas) and asks each pod by its name under the headless Service, on
// http.listen's port, for GET /v1/backup with the daemon's token, and the API
// accepts that Host (http.allowed_hosts) and answers with the store.
func TestK8sBackupReachesEveryOrdinal(t *testing.T) {
	sts, _, cfg, cj := k8sManifests(t)
	c := cj.Spec.JobTemplate.Spec.Template.Spec.Containers[0]
	e, ok := envOf(c, "REPLICAS")
	if !ok || e.Value != strconv.Itoa(sts.Spec.Replicas) {
		t.Fatalf("the backup job's REPLICAS is %q, the StatefulSet's replicas %d: the job must reach every ordinal", e.Value, sts.Spec.Replicas)
	}
	tok, ok := envOf(c, "SLACKPOLL_HTTP_TOKEN")
	dtok, _ := envOf(sts.Spec.Template.Spec.Containers[0], "SLACKPOLL_HTTP_TOKEN")
	if !ok || tok.ValueFrom == nil || dtok.ValueFrom == nil || tok.ValueFrom.SecretKeyRef != dtok.ValueFrom.SecretKeyRef {
		t.Errorf("the backup job's token %+v is not the daemon's %+v", tok, dtok)
	}
	script := strings.Join(c.Args, "\n")
	loop := regexp.MustCompile(`(?m)^\s*i=0\s*$[\s\S]*while \[ "\$i" -lt "\$REPLICAS" \]; do[\s\S]*i=\$\(\(i \+ 1\)\)`)
	pod := regexp.MustCompile(`pod="([a-z0-9-]+)-\$i"`).FindStringSubmatch(script)
	url := regexp.MustCompile(`"http://\$pod\.([a-z0-9-]+):([0-9]+)(/[a-z0-9/]+)"`).FindStringSubmatch(script)
	if !loop.MatchString(script) || pod == nil || url == nil {
		t.Fatalf("the backup script does not loop i over 0 … REPLICAS-1 asking http://$pod.<service>:<port>/<path>:\n%s", script)
	}
	if pod[1] != sts.Metadata.Name || url[1] != sts.Spec.ServiceName {
		t.Errorf("the job asks %s-N.%s, the pods are %s-N.%s", pod[1], url[1], sts.Metadata.Name, sts.Spec.ServiceName)
	}
	if _, port, _ := net.SplitHostPort(cfg.HTTP.Listen); url[2] != port {
		t.Errorf("the job asks port %s, http.listen is %s", url[2], cfg.HTTP.Listen)
	}
	get := k8sAPI(t, cfg)
	for i := range sts.Spec.Replicas {
		host := pod[1] + "-" + strconv.Itoa(i) + "." + url[1]
		if code := get(host+":"+url[2], url[3], cfg.HTTP.Token.Reveal()); code != http.StatusOK {
			t.Errorf("GET http://%s:%s%s answers %d, want 200 (is %s in http.allowed_hosts?)", host, url[2], url[3], code, host)
		}
	}
	if code := get("slackpoll.example:"+url[2], url[3], cfg.HTTP.Token.Reveal()); code != http.StatusForbidden {
		t.Errorf("a Host not in http.allowed_hosts answers %d, want 403: the test cannot tell the names apart", code)
	}
	if code := get(pod[1]+"-0."+url[1]+":"+url[2], url[3], ""); code != http.StatusUnauthorized {
		t.Errorf("GET %s without the token answers %d, want 401", url[3], code)
	}
}

// Every manifest names only kinds the committed schemas cover (schemas/gen writes
// them; kubeconform in CI finds no schema for another kind and fails, but only CI
// runs kubeconform).
func TestK8sKindsHaveSchemas(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("k8s", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests: %v", err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var m struct {
			APIVersion string `yaml:"apiVersion"`
			Kind       string `yaml:"kind"`
		}
		if err := yaml.Unmarshal(b, &m); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if m.Kind == "Kustomization" {
			continue
		}
		group, version, ok := strings.Cut(m.APIVersion, "/")
		suffix := "-" + group + "-" + version
		if !ok {
			suffix = "-" + group
		}
		schema := filepath.Join("k8s", "schemas", strings.ToLower(m.Kind)+suffix+".json")
		if _, err := os.Stat(schema); errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is a %s %s, which has no schema (%s): add it to schemas/gen", f, m.APIVersion, m.Kind, schema)
		}
	}
}
