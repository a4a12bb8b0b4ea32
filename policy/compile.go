package policy

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/memgate/memgate/memory"
	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
	"github.com/open-policy-agent/opa/v1/util"
)

// The documents the sidecar asks policy for: the decision about a placed
// write, and (optional) where free text goes.
const (
	DecisionQuery  = "data.memgate.decision"
	PlacementQuery = "data.memgate.placement"
	// WriteQuery is placement and decision in one evaluation, for a write
	// before placement (memory.WritePolicy): {"placement", "decision"}.
	WriteQuery = "data.memgate.write"
)

// Compiled is one revision of a policy, compiled and prepared for
// evaluation once. It is immutable and safe for concurrent use; it
// implements memory.Classifier.
type Compiled struct {
	revision string
	files    FileSet
	features *textFeatures // all the policy declares; nil when none
	// retention is how long old versions keep their text (retention.go).
	retention memory.Retention
	data      dataCache
	decision  rego.PreparedEvalQuery
	// place is prepared when the policy defines a placement document;
	// without one, free text is placed by the slot fields of a decision.
	place *rego.PreparedEvalQuery
	// write is prepared when the policy defines a write document (and a
	// placement): one query per write.
	write *rego.PreparedEvalQuery
	// scans shares a candidate's text scan between its placement and its
	// decision; nil when no query reads text features.
	scans *scanMemo
}

// compileConfig holds compile's switches.
type compileConfig struct {
	// runTests runs the policy's Rego tests; the embedded default policy's
	// tests run in go test, so starting the sidecar skips them.
	runTests bool
	// opaStore keeps the policy's data in OPA's own store rather than
	// dataStore: the differential test's reference evaluation
	// (plain_test.go) is a plain OPA host's.
	opaStore bool
}

var _ memory.Classifier = (*Compiled)(nil)

// Compile builds a classifier from an in-memory policy (e.g. the files of a
// policy directory sent to the admin API), without touching disk. The
// policy must parse as Rego v1, compile, pass its own Rego tests and decide
// a plain knowledge write.
func Compile(ctx context.Context, files FileSet) (*Compiled, error) {
	return compile(ctx, files, compileConfig{runTests: true})
}

// CompileUntested is Compile without running the policy's Rego tests: for
// a caller that runs them itself (RunRegoTests) and reports their
// failures next to what the policy decides, as `sidecar policy test` does.
// Never install what it returns without the tests having passed.
func CompileUntested(ctx context.Context, files FileSet) (*Compiled, error) {
	return compile(ctx, files, compileConfig{})
}

// compile is Compile with its switches.
func compile(ctx context.Context, files FileSet, cfg compileConfig) (*Compiled, error) {
	rev := files.Revision()
	modules, tests, data, err := parsePolicy(files)
	if err != nil {
		return nil, err
	}
	features, err := parseFeatures(data)
	if err != nil {
		return nil, err
	}
	retention, err := parseRetention(data)
	if err != nil {
		return nil, err
	}
	if features, err = withModel(features, files); err != nil {
		return nil, err
	}
	if cfg.runTests && len(tests) > 0 {
		rep, err := runRegoTests(ctx, withTests(modules, tests), data)
		if err != nil {
			return nil, err
		}
		if err := rep.err(); err != nil {
			return nil, err
		}
	}
	compiler, store := ast.NewCompiler(), dataStore(data)
	if cfg.opaStore {
		store = inmem.NewFromObject(data)
	}
	opts := []func(*rego.Rego){rego.Query(DecisionQuery), rego.Store(store), rego.Compiler(compiler)}
	for _, m := range modules {
		opts = append(opts, rego.ParsedModule(m))
	}
	pq, err := rego.New(opts...).PrepareForEval(ctx)
	if err != nil {
		return nil, fmt.Errorf("compile policy: %w", err)
	}
	var place *rego.PreparedEvalQuery
	if len(compiler.GetRules(ast.MustParseRef(PlacementQuery))) > 0 {
		// The compiler already holds the modules: this only plans the query.
		q, err := rego.New(rego.Query(PlacementQuery), rego.Store(store), rego.Compiler(compiler)).PrepareForEval(ctx)
		if err != nil {
			return nil, fmt.Errorf("compile policy placement: %w", err)
		}
		place = &q
	}
	var write *rego.PreparedEvalQuery
	if place != nil && len(compiler.GetRules(ast.MustParseRef(WriteQuery))) > 0 && readsLayerInput(modules) == "" {
		q, err := rego.New(rego.Query(WriteQuery), rego.Store(store), rego.Compiler(compiler)).PrepareForEval(ctx)
		if err != nil {
			return nil, fmt.Errorf("compile policy write: %w", err)
		}
		write = &q
	}
	root, err := ast.InterfaceToValue(data)
	if err != nil {
		return nil, fmt.Errorf("policy data: %w", err)
	}
	p := &Compiled{revision: rev, files: files, features: features, retention: retention, data: dataCache{root: root},
		decision: pq, place: place, write: write, scans: newScanMemo(features)}
	if _, err := p.Classify(ctx, probeInput()); err != nil {
		return nil, fmt.Errorf("policy does not decide a plain knowledge write: %w", err)
	}
	return p, nil
}

// layerInputRules may read the candidate's layer fields from the input in
// a policy that keeps the write document: the layer a write is judged at
// (rules.rego) and the declared one (placement.rego).
var layerInputRules = map[string]bool{"judged_layers": true, "declared_layer": true}

// readsLayerInput names a rule, other than layerInputRules, that reads
// input.candidate.layer or input.candidate.inferredLayer ("" when none).
// The write document's one query decides about the write before placement
// (memory.WritePolicy), where those fields are not yet the placed write's:
// such a policy is asked placement and decision apart instead, as one
// without a write document is.
func readsLayerInput(modules map[string]*ast.Module) string {
	fields := []ast.Ref{ast.MustParseRef("input.candidate.layer"), ast.MustParseRef("input.candidate.inferredLayer")}
	for _, m := range modules {
		for _, r := range m.Rules {
			name := r.Head.Ref().String()
			if layerInputRules[name] {
				continue
			}
			found := false
			ast.WalkRefs(r, func(ref ast.Ref) bool {
				for _, f := range fields {
					if ref.HasPrefix(f) {
						found = true
					}
				}
				return found
			})
			if found {
				return name
			}
		}
	}
	return ""
}

// Revision is the content hash of the policy's files.
func (p *Compiled) Revision() string { return p.revision }

// Files returns the policy's files; the caller must not modify them.
func (p *Compiled) Files() FileSet { return p.files }

// parsePolicy checks a policy's files against the bounds, parses its
// modules (tests apart) and merges its data documents.
func parsePolicy(files FileSet) (modules, tests map[string]*ast.Module, data map[string]any, err error) {
	if err := files.Validate(); err != nil {
		return nil, nil, nil, err
	}
	if modules, tests, err = parseModules(files); err != nil {
		return nil, nil, nil, err
	}
	if data, err = mergeData(files); err != nil {
		return nil, nil, nil, err
	}
	return modules, tests, data, nil
}

// parseModules parses every .rego file as Rego v1, separating the tests.
func parseModules(files FileSet) (modules, tests map[string]*ast.Module, err error) {
	modules, tests = map[string]*ast.Module{}, map[string]*ast.Module{}
	var errs []error
	for p, content := range files {
		if !isModule(p) {
			continue
		}
		m, err := ast.ParseModuleWithOpts(p, content, ast.ParserOptions{RegoVersion: ast.RegoV1, ProcessAnnotation: true})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if isTestModule(p) {
			tests[p] = m
		} else {
			modules[p] = m
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, nil, fmt.Errorf("parse policy: %w", err)
	}
	return modules, tests, nil
}

// mergeData places every data file at its directory's path, as OPA's
// loader does, and refuses two files that set the same value.
func mergeData(files FileSet) (map[string]any, error) {
	root := map[string]any{}
	for p, content := range files {
		if isModule(p) || isModel(p) {
			continue
		}
		var doc any
		if err := util.Unmarshal([]byte(content), &doc); err != nil {
			return nil, fmt.Errorf("parse data file %s: %w", p, err)
		}
		obj, ok := doc.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("data file %s: want an object at the top", p)
		}
		node := root
		if dir := path.Dir(p); dir != "." {
			for _, key := range strings.Split(dir, "/") {
				child, ok := node[key].(map[string]any)
				if !ok {
					if _, taken := node[key]; taken {
						return nil, fmt.Errorf("data file %s: %s is already a value", p, dir)
					}
					child = map[string]any{}
					node[key] = child
				}
				node = child
			}
		}
		if err := mergeObjects(node, obj, p); err != nil {
			return nil, err
		}
	}
	return root, nil
}

func mergeObjects(dst, src map[string]any, file string) error {
	for k, v := range src {
		old, exists := dst[k]
		if !exists {
			dst[k] = v
			continue
		}
		a, aok := old.(map[string]any)
		b, bok := v.(map[string]any)
		if !aok || !bok {
			return fmt.Errorf("data file %s: key %q is set by another data file too", file, k)
		}
		if err := mergeObjects(a, b, file); err != nil {
			return err
		}
	}
	return nil
}

// dataStore holds the data as AST values, so evaluation reads them without
// converting on every query.
func dataStore(data map[string]any) storage.Store {
	return inmem.NewFromObjectWithOpts(data, inmem.OptRoundTripOnWrite(true), inmem.OptReturnASTValuesOnRead(true))
}

// probeInput is a plain knowledge write every policy must decide.
func probeInput() *memory.PolicyInput {
	return &memory.PolicyInput{
		Op: memory.OpWrite,
		Candidate: &memory.Record{ID: "probe", SlotID: "probe", Op: memory.OpWrite, Layer: memory.LayerKnowledge,
			SubjectID: "probe", Summary: "The team meets on Mondays.", Status: memory.StatusPending,
			CandidateSource: memory.SourceUser},
		Pending: []*memory.Record{},
		Dialect: "native",
	}
}

// dataCache serves reads of the policy's data from one AST value shared by
// every evaluation, as a read-only topdown.BaseCache: OPA would otherwise
// read the store and build a per-query cache for each data reference.
type dataCache struct{ root ast.Value }

func (c dataCache) Get(ref ast.Ref) ast.Value {
	if len(ref) == 0 || !ref[0].Equal(ast.DefaultRootDocument) {
		return nil
	}
	v, err := c.root.Find(ref[1:])
	if err != nil {
		return nil
	}
	return v
}

// Put ignores what the evaluator read: the cache already holds all data.
func (dataCache) Put(ast.Ref, ast.Value) {}
