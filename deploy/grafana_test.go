package deploy_test

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
)

const dashboardFile = "grafana/memgate-dashboard.json"

type dashboard struct {
	UID        string  `json:"uid"`
	Title      string  `json:"title"`
	Panels     []panel `json:"panels"`
	Templating struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query any    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

type panel struct {
	ID         int    `json:"id"`
	Type       string `json:"type"`
	Title      string `json:"title"`
	Datasource *struct {
		UID string `json:"uid"`
	} `json:"datasource"`
	GridPos struct {
		H, W, X, Y int
	} `json:"gridPos"`
	Targets []struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	} `json:"targets"`
	Panels []panel `json:"panels"` // of a collapsed row
}

func readDashboard(t *testing.T) *dashboard {
	t.Helper()
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	return &d
}

// queryPanels returns every panel that queries Prometheus, rows unfolded.
func (d *dashboard) queryPanels() []panel {
	var out []panel
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			if p.Type == "row" {
				walk(p.Panels)
				continue
			}
			out = append(out, p)
		}
	}
	walk(d.Panels)
	return out
}

// dashboardQueries returns the PromQL of every panel, with Grafana's
// variables replaced the way Grafana would for a Prometheus query.
func (d *dashboard) queries() map[string]string {
	out := map[string]string{}
	for _, p := range d.queryPanels() {
		for _, q := range p.Targets {
			expr := strings.NewReplacer("$__rate_interval", "1m", "$__range", "1h", "$instance", ".*").Replace(q.Expr)
			out[p.Title+"/"+q.RefID] = expr
		}
	}
	return out
}

func TestDashboardIsWellFormed(t *testing.T) {
	d := readDashboard(t)
	if d.UID == "" || d.Title == "" {
		t.Fatal("the dashboard needs a uid and a title")
	}
	vars := map[string]bool{}
	for _, v := range d.Templating.List {
		vars[v.Name] = true
	}
	if !vars["datasource"] || !vars["instance"] {
		t.Fatalf("template variables %v, want datasource and instance", vars)
	}
	ids := map[int]bool{}
	for _, p := range d.queryPanels() {
		if ids[p.ID] {
			t.Errorf("panel id %d is used twice", p.ID)
		}
		ids[p.ID] = true
		if p.Datasource == nil || p.Datasource.UID != "${datasource}" {
			t.Errorf("panel %q does not use the datasource variable", p.Title)
		}
		if p.GridPos.W <= 0 || p.GridPos.X+p.GridPos.W > 24 || p.GridPos.H <= 0 {
			t.Errorf("panel %q lies outside the 24-column grid: %+v", p.Title, p.GridPos)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, q := range p.Targets {
			if !strings.Contains(q.Expr, `instance=~"$instance"`) {
				t.Errorf("panel %q query %s ignores the instance selector: %s", p.Title, q.RefID, q.Expr)
			}
		}
	}
}

// TestDashboardUsesExportedMetrics: every metric a panel selects is one a
// sidecar exports, and every memgate metric family has a panel.
func TestDashboardUsesExportedMetrics(t *testing.T) {
	exported := exportedNames(t)
	exported["up"] = true
	d := readDashboard(t)
	used := map[string]bool{}
	for where, expr := range d.queries() {
		names := metricNames(expr)
		if len(names) == 0 {
			t.Errorf("%s: no metric in %q", where, expr)
		}
		for _, n := range names {
			used[n] = true
			if !exported[n] {
				t.Errorf("%s selects %s, which memgate does not export", where, n)
			}
		}
	}
	for _, v := range d.Templating.List {
		if q, ok := v.Query.(map[string]any); ok {
			m := regexp.MustCompile(`label_values\(([a-z_:]+)`).FindStringSubmatch(q["query"].(string))
			if m == nil || !exported[m[1]] {
				t.Errorf("variable %s queries %v", v.Name, q["query"])
			}
		}
	}
	histogramSuffix := regexp.MustCompile(`_(bucket|sum|count)$`)
	for name := range exported {
		if !strings.HasPrefix(name, "memgate_") || histogramSuffix.MatchString(name) {
			continue
		}
		if !used[name] && !used[name+"_bucket"] && !used[name+"_count"] {
			t.Errorf("no panel shows %s", name)
		}
	}
}
